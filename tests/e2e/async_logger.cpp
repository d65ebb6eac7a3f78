// A shared library with an asynchronous logger, as services have: its
// static destructor asks the logger thread to write what it holds and joins
// it. The program's libraries are finalized after libgpuscope.so, so this
// destructor runs after gpuscope has written its end record and runs on
// the thread ending the process (test_exit_paths.cpp).
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

namespace {

class AsyncLogger {
 public:
  AsyncLogger()
      : thread_([this] {
          std::unique_lock lock(mutex_);
          wake_.wait(lock, [this] { return stopping_; });
          std::printf("logger: flushed at exit\n");
          std::fflush(stdout);
        }) {}
  ~AsyncLogger() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

AsyncLogger g_logger;

}  // namespace

extern "C" void async_logger_log(const char* line) { std::printf("%s\n", line); }
