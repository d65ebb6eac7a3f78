// Hot-path timestamps in TSC ticks must land on the CLOCK_MONOTONIC axis.
#include <gtest/gtest.h>

#include <thread>
#include <utility>

#include "byte_source.h"
#include "clock.h"
#include "trace_reader.h"
#include "trace_summary.h"
#include "../support/sample_trace.h"

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
  // Each (ticks, ns) reference pair bracketed and the narrowest of 16 kept:
  // a thread preempted between two bare reads (a busy CI machine) put one
  // 175 us off, 0.6 % of the span.
  const auto reference = [] {
    uint64_t best_width = UINT64_MAX, ticks = 0, ns = 0;
    for (int i = 0; i < 16; ++i) {
      const uint64_t before = monotonic_ns();
      const uint64_t t = __rdtsc();
      const uint64_t after = monotonic_ns();
      if (after - before < best_width) best_width = after - before, ticks = t, ns = before + (after - before) / 2;
    }
    return std::pair{ticks, ns};
  };
  const auto [t0, n0] = reference();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  const auto [t1, n1] = reference();
  const double ratio = static_cast<double>(c.span_ns(t1 - t0)) / static_cast<double>(n1 - n0);
  EXPECT_NEAR(ratio, 1.0, 0.001);
#endif
}

// Pairs every 10 ms (the writer's drain period) from a TSC ticking
// `per_ns` ticks a nanosecond, continuing from `c`'s last pair.
void tick_for(TickConverter& c, uint64_t& ticks, uint64_t& ns, double per_ns, int drains) {
  for (int i = 0; i < drains; ++i) {
    ticks += static_cast<uint64_t>(10'000'000 * per_ns);
    ns += 10'000'000;
    c.calibrate_at(ticks, ns);
  }
}

TEST(TickConverter, AChangeOfTheTicksRateStartsTheSlopeOver) {
  TickConverter c;
  uint64_t ticks = 1'000'000, ns = 5'000'000'000;
  c.calibrate_at(ticks, ns);
  tick_for(c, ticks, ns, 2.0, 100);  // a second at 2 GHz
  tick_for(c, ticks, ns, 2.6, 1);    // migrated to a 2.6 GHz host
  EXPECT_EQ(c.rate_changes(), 1u);
  // A record 5 ms before the last drain, at the new rate: placed within a
  // microsecond. The slope over the whole run (2.006 ticks a ns) would put it
  // 1.5 ms off.
  EXPECT_NEAR(static_cast<double>(c.to_ns(ticks - 13'000'000)), static_cast<double>(ns - 5'000'000), 1000.0);
  tick_for(c, ticks, ns, 2.6, 50);
  EXPECT_EQ(c.rate_changes(), 1u) << "the new rate is the slope now";
  EXPECT_NEAR(static_cast<double>(c.span_ns(2'600'000)), 1'000'000.0, 1.0);
}

TEST(TickConverter, ClockSlewAndShortSpansAreNoRateChange) {
  TickConverter c;
  uint64_t ticks = 0, ns = 1'000'000'000;
  c.calibrate_at(ticks, ns);
  tick_for(c, ticks, ns, 2.0, 100);
  tick_for(c, ticks, ns, 2.0 * 1.0005, 100);  // NTP's largest slew, 500 ppm
  EXPECT_EQ(c.rate_changes(), 0u);
  // 200 us between two pairs (an early drain at exit): too short to judge.
  ticks += 600'000;  // 3 ticks a ns
  ns += 200'000;
  c.calibrate_at(ticks, ns);
  EXPECT_EQ(c.rate_changes(), 0u);
}

// The end record says how often the slope started over (format 2.3), so a
// reader knows the run crossed a rate change; a trace without the field
// (older, or no change) reads 0.
uint32_t restarts_read_back(uint32_t restarts) {
  TotalsInfo totals;
  totals.end.kind = fb::EndKind::ReturnFromMain;
  totals.tick_rate_restarts = restarts;
  const auto bytes = test::one_frame_trace(ProcessMetadata{}, totals, [](ChunkBuilder&) {});
  reader::TraceReader r;
  std::string error;
  EXPECT_TRUE(r.open(reader::memory_source(bytes), "trace", &error)) << error;
  const reader::TraceSummary s = reader::summarize(r);
  EXPECT_TRUE(s.end.has_value());
  return s.end ? s.end->tick_rate_restarts : UINT32_MAX;
}

TEST(TickConverter, TheTraceSaysHowOftenTheSlopeStartedOver) {
  TickConverter c;
  uint64_t ticks = 1'000'000, ns = 5'000'000'000;
  c.calibrate_at(ticks, ns);
  tick_for(c, ticks, ns, 2.0, 100);
  tick_for(c, ticks, ns, 2.6, 50);
  tick_for(c, ticks, ns, 2.0, 50);  // and back
  EXPECT_EQ(restarts_read_back(c.rate_changes()), 2u);
  EXPECT_EQ(restarts_read_back(0), 0u);
}

}  // namespace
}  // namespace gpuscope::capture
