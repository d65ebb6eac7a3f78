// What the end of a traced process relies on (preload/process_end.h):
// gpuscope's own threads are known while they run, and the program's
// standard streams are held while the ending thread runs and given back
// as soon as it waits on anything else.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include "clock.h"
#include "own_threads.h"
#include "quiet_output.h"
#include "signal_free_thread.h"

extern "C" FILE _IO_2_1_stderr_;

namespace gpuscope::capture {
namespace {

using namespace std::chrono_literals;

TEST(OwnThreads, KnownWhileTheyRunAndCountedFromTheirStart) {
  const int before = own_threads_alive();
  std::atomic<pid_t> tid{0};
  std::atomic<bool> leave{false};
  std::thread t = start_signal_free_thread([&] {
    tid = gettid();
    while (!leave) std::this_thread::sleep_for(1ms);
  });
  EXPECT_EQ(own_threads_alive(), before + 1);  // counted even before it runs
  while (tid == 0) std::this_thread::sleep_for(1ms);
  EXPECT_TRUE(is_own_thread(tid));
  EXPECT_FALSE(is_own_thread(gettid()));
  EXPECT_NE(thread_state(tid), '\0');
  leave = true;
  t.join();
  EXPECT_EQ(own_threads_alive(), before);
  EXPECT_FALSE(is_own_thread(tid));
  EXPECT_EQ(thread_state(tid), '\0');  // gone
}

bool stderr_free() {
  if (ftrylockfile(&_IO_2_1_stderr_) != 0) return false;
  funlockfile(&_IO_2_1_stderr_);
  return true;
}

// One test: the hold is taken once per process.
TEST(QuietOutput, HeldWhileTheEndingThreadRunsGivenBackWhenItWaits) {
  std::atomic<int> stage{0};
  std::thread ending([&] {
    hold_program_output();
    stage = 1;
    {
      const EndWorkScope gpuscope_work;  // asleep in gpuscope's own end work: still held
      std::this_thread::sleep_for(30ms);
    }
    const uint64_t until = monotonic_ns() + 30'000'000;  // running program code: still held
    while (monotonic_ns() < until) {
    }
    stage = 2;
    std::this_thread::sleep_for(300ms);  // waiting on program code: given back
  });
  while (stage == 0) std::this_thread::sleep_for(1ms);
  for (int i = 0; i < 20 && stage == 1; ++i) {
    EXPECT_FALSE(stderr_free()) << "given back while the ending thread was in gpuscope's work or running";
    std::this_thread::sleep_for(2ms);
  }
  while (stage == 1) std::this_thread::sleep_for(1ms);
  bool released = false;
  for (int i = 0; i < 1000 && !released; ++i) {
    released = stderr_free();
    if (!released) std::this_thread::sleep_for(1ms);
  }
  EXPECT_TRUE(released) << "a waiting ending thread kept the streams";
  ending.join();
}

}  // namespace
}  // namespace gpuscope::capture
