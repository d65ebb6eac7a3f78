// Hot-path timestamps in TSC ticks must land on the CLOCK_MONOTONIC axis.
#include <gtest/gtest.h>

#include <thread>

#include "clock.h"

namespace gpuscope::capture {
namespace {

TEST(TickConverter, PlacesTicksOnTheMonotonicAxis) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "TSC timestamps are x86-64 only";
#else
  TickConverter c;
  c.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  c.calibrate();
  for (int i = 0; i < 100; ++i) {
    const uint64_t before = monotonic_ns();
    const uint64_t ticks = __rdtsc();
    const uint64_t after = monotonic_ns();
    const uint64_t ns = c.to_ns(ticks);
    // Within 2 us of the bracket: calibration is good to tens of ns, the
    // margin is for a preempted thread between the reads.
    EXPECT_GE(ns + 2000, before);
    EXPECT_LE(ns, after + 2000);
  }
  const uint64_t t0 = __rdtsc();
  const uint64_t n0 = monotonic_ns();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  const uint64_t t1 = __rdtsc();
  const uint64_t n1 = monotonic_ns();
  const double ratio = static_cast<double>(c.span_ns(t1 - t0)) / static_cast<double>(n1 - n0);
  EXPECT_NEAR(ratio, 1.0, 0.001);
#endif
}

}  // namespace
}  // namespace gpuscope::capture
