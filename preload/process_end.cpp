#include "process_end.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "own_threads.h"
#include "real_symbol.h"
#include "session.h"
#include "signal_free_thread.h"

namespace gpuscope::preload::process_end {
namespace {

struct Step {
  fb::EndKind kind = fb::EndKind::Unknown;
  int status = 0;
};

// The end's state, changed only under StepLock (a few instructions; never
// held while waiting).
std::atomic<pid_t> g_lock{0};
std::atomic<int> g_pid{0};
pid_t g_owner = 0;     // the thread ending the process
// Set with g_owner: from then on every way out is arbitrated, even once
// the owner's last write has stopped recording.
std::atomic<bool> g_ending{false};
bool g_writing = false;  // the owner has begun writing the end record
Step g_first, g_last;
int g_steps = 0;

// Held by one thread; a signal handler that interrupts the holder and takes
// a step of its own goes on without it (the interrupted step never resumes
// once the handler has left the process).
class StepLock {
 public:
  explicit StepLock(pid_t tid) noexcept {
    for (;;) {
      pid_t holder = 0;
      if (g_lock.compare_exchange_weak(holder, tid, std::memory_order_acquire)) return;
      if (holder == tid) {
        nested_ = true;
        return;
      }
      sched_yield();
    }
  }
  ~StepLock() {
    if (!nested_) g_lock.store(0, std::memory_order_release);
  }
  StepLock(const StepLock&) = delete;
  StepLock& operator=(const StepLock&) = delete;

 private:
  bool nested_ = false;
};

// What glibc 2.41 does to a second exit() caller: the thread waits until
// the owner's way out ends the process. Signal handlers still run.
[[noreturn]] void wait_for_the_end() {
  for (;;) pause();
}

// A watch of 5 ms costs one read of /proc/self/stat (~10 us) per period
// while the program runs on without its main thread; the process ends at
// most that much later than it would without gpuscope.
constexpr long kWatchPeriodNs = 5'000'000;

long threads_in_process(int stat_fd) {
  char buf[1024];
  const ssize_t n = pread(stat_fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return -1;
  buf[n] = '\0';
  const char* p = std::strrchr(buf, ')');  // the command name may hold anything
  for (int field = 2; p != nullptr && field < 20; ++field) p = std::strchr(p + 1, ' ');
  return p == nullptr ? -1 : std::strtol(p + 1, nullptr, 10);  // field 20: num_threads
}

// A zombie once it has finished leaving (until the process ends).
bool main_thread_left(pid_t pid) {
  const char state = capture::thread_state(pid);
  return state == 'Z' || state == 'X' || state == '\0';
}

// Every task of the process is gpuscope's, but for the main thread, which
// has finished leaving (a zombie until the process ends).
bool only_own_threads_left(int stat_fd) {
  const pid_t pid = getpid();
  // The main thread's zombie counts in num_threads.
  if (threads_in_process(stat_fd) > capture::own_threads_alive() + 1) return false;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return false;
  bool only_own = true;
  while (const dirent* e = readdir(dir)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const pid_t tid = static_cast<pid_t>(std::strtol(e->d_name, nullptr, 10));
    if (tid == pid ? !main_thread_left(pid) : !capture::is_own_thread(tid)) only_own = false;
  }
  closedir(dir);
  return only_own;
}

// The end glibc gives a process whose last thread ends: exit(0), its
// handlers and destructors, here on the watch's thread with the main
// thread's signal mask (a signal that came in meanwhile acts now, as it
// would have on the program's last thread).
void watch_for_the_last_thread(sigset_t main_mask) {
  pthread_setname_np(pthread_self(), "gpuscope-watch");
  const int stat_fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
  if (stat_fd < 0) return;
  const timespec period{0, kWatchPeriodNs};
  do nanosleep(&period, nullptr);
  while (!only_own_threads_left(stat_fd));
  close(stat_fd);
  pthread_sigmask(SIG_SETMASK, &main_mask, nullptr);
  if (applies()) take_step(fb::EndKind::LastThreadExit, 0);
  gpuscope::capture::next<void (*)(int)>("exit")(0);
}

}  // namespace

void set_process(int pid) noexcept { g_pid.store(pid, std::memory_order_release); }

bool applies() noexcept {
  if (getpid() != g_pid.load(std::memory_order_acquire)) return false;  // a fork or vfork child
  const capture::Phase phase = capture::current_phase();
  return phase == capture::Phase::Recording || phase == capture::Phase::Paused ||
         g_ending.load(std::memory_order_acquire);
}

void take_step(fb::EndKind kind, int status) noexcept {
  const pid_t tid = gettid();
  bool wait = false;
  {
    const StepLock lock(tid);
    if (g_owner == 0) {
      g_owner = tid;
      g_ending.store(true, std::memory_order_release);
      g_first = {kind, status};
    } else if (g_owner != tid) {
      // _exit is immediate: it may take the end over until the record is
      // being written, and the status it sets is the one recorded.
      if (kind == fb::EndKind::ImmediateExit && !g_writing) g_owner = tid;
      else wait = true;
    }
    if (!wait) {
      g_last = {kind, status};
      ++g_steps;
    }
  }
  if (wait) wait_for_the_end();
}

capture::EndNote note() noexcept {
  const StepLock lock(gettid());
  capture::EndNote n{g_last.kind, g_last.status};
  if (g_steps > 1) {
    n.began_kind = g_first.kind;
    n.began_status = g_first.status;
  }
  return n;
}

bool begin_final_write() noexcept {
  const pid_t tid = gettid();
  bool wait = false, write = true;
  {
    const StepLock lock(tid);
    if (g_owner == 0) {  // an end no hook saw (glibc's own exit()): its kind stays unknown
      g_owner = tid;
      g_ending.store(true, std::memory_order_release);
    }
    if (g_owner != tid) wait = true;
    else if (g_writing) write = false;
    else g_writing = true;
  }
  if (wait) wait_for_the_end();
  return write;
}

void main_thread_leaving() noexcept {
  static std::atomic<bool> watching{false};
  if (capture::own_threads_alive() == 0 || watching.exchange(true)) return;
  sigset_t mask;
  pthread_sigmask(SIG_BLOCK, nullptr, &mask);
  try {
    capture::start_signal_free_thread([mask] { watch_for_the_last_thread(mask); }).detach();
  } catch (...) {
    // No thread to spare: the process outlives its last thread, as before.
  }
}

}  // namespace gpuscope::preload::process_end
