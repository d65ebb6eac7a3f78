#include "clock.hpp"

#include <ctime>
#include <sys/prctl.h>

namespace simgpu {
namespace {

constexpr int64_t kSpinTail = 40'000;       // ns spun after a sleep's wake-up
constexpr int64_t kSleepThreshold = 150'000;  // shorter waits only spin

void sleep_until(int64_t deadline) {
  // The default 50 us timer slack would make every short sleep overshoot;
  // tighten it for this sleep only, then give the thread its own back.
  const int old_slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
  prctl(PR_SET_TIMERSLACK, 1000, 0, 0, 0);
  timespec ts{static_cast<time_t>(deadline / 1'000'000'000), static_cast<long>(deadline % 1'000'000'000)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) != 0) {
  }
  if (old_slack > 0) prctl(PR_SET_TIMERSLACK, old_slack, 0, 0, 0);
}

}  // namespace

int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void wait_until(int64_t deadline) {
  const int64_t remaining = deadline - now_ns();
  if (remaining <= 0) return;
  if (remaining > kSleepThreshold) sleep_until(deadline - kSpinTail);
  while (now_ns() < deadline) {
  }
}

void spend_host_time(int64_t ns) {
  if (ns > 0) wait_until(now_ns() + ns);
}

}  // namespace simgpu
