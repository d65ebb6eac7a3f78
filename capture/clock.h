// gpuscope's time axis is CLOCK_MONOTONIC in nanoseconds (CUPTI is told to
// use the same clock, so host and device timestamps share one axis).
//
// The hot path may read the TSC instead: when the kernel's own clocksource is
// the TSC, CLOCK_MONOTONIC is a linear function of it, and `rdtsc` costs a
// third of a vDSO clock_gettime on this class of machine (12 vs 30 ns,
// docs/performance.md). Records stamped in ticks are marked as such in the
// ring, and the writer converts them with calibration pairs it takes at
// every drain (TickConverter). The same holds, to the NTP slew between two
// drains, for an invariant TSC the kernel still offers under a hypervisor's
// clocksource (protocol/host_clock.h). Elsewhere (another clocksource,
// non-x86, GPUSCOPE_CLOCK=monotonic) the hot path reads CLOCK_MONOTONIC
// directly.
#pragma once

#include <atomic>
#include <cstdint>
#include <ctime>
#include <string>

#include "host_clock.h"

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace gpuscope::capture {

inline uint64_t monotonic_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

inline uint64_t realtime_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

namespace detail {
// Set at session start, before the phase turns to Recording.
extern std::atomic<bool> g_timestamps_in_ticks;
}

// How the hooks stamp their calls on this machine now (live clocksource,
// CPUID, GPUSCOPE_CLOCK): protocol/host_clock.h decides.
protocol::HotClock choose_hot_clock();

// A hot-path timestamp: TSC ticks or CLOCK_MONOTONIC ns, per
// hot_timestamps_are_ticks().
inline bool hot_timestamps_are_ticks() noexcept {
  return detail::g_timestamps_in_ticks.load(std::memory_order_relaxed);
}

// Same, for a caller that already read hot_timestamps_are_ticks().
inline uint64_t hot_timestamp(bool ticks) noexcept {
#if defined(__x86_64__)
  if (ticks) return __rdtsc();
#endif
  return monotonic_ns();
}

inline uint64_t hot_timestamp() noexcept { return hot_timestamp(hot_timestamps_are_ticks()); }

// Writer side: turns TSC ticks into CLOCK_MONOTONIC ns. Each calibrate()
// takes a (ticks, ns) pair; conversion anchors at the latest pair and uses
// the slope since the first, so a record between two drains is placed within
// a few tens of nanoseconds.
class TickConverter {
 public:
  // The first pair, taken when capture starts (cheap: no waiting), so the
  // first drain already has a baseline of milliseconds.
  void start() noexcept;
  // A new pair; call before converting what was drained since the last one.
  void calibrate() noexcept;
  // The same with a pair measured elsewhere (tests; calibrate() measures
  // one). Where the ticks' rate since the previous pair differs from the
  // slope so far by more than kRateChange (a live migration to a host with
  // another TSC rate and no TSC scaling), the slope starts over from the
  // previous pair, so later records are not skewed for the rest of the run.
  void calibrate_at(uint64_t ticks, uint64_t ns) noexcept;
  // How often the slope started over.
  uint32_t rate_changes() const noexcept { return rate_changes_; }

  static constexpr double kRateChange = 0.01;  // NTP slews CLOCK_MONOTONIC by at most 0.05 %
  // The shortest span judged for it: a pair's bracket is under 1 us, so
  // over 1 ms it can fake 0.1 % at most.
  static constexpr uint64_t kRateSpanNs = 1'000'000;

  // Fixed point with a 128-bit product: exact to a nanosecond over any span
  // a trace covers, and a few instructions in the writer's per-record loop.
  uint64_t to_ns(uint64_t ticks) const noexcept {
    const auto delta = static_cast<__int128>(static_cast<int64_t>(ticks - last_.ticks));
    return last_.ns + static_cast<uint64_t>((delta * static_cast<__int128>(ns_per_tick_q32_)) >> 32);
  }
  uint64_t span_ns(uint64_t ticks) const noexcept {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(ticks) * ns_per_tick_q32_) >> 32);
  }

 private:
  struct Pair {
    uint64_t ticks = 0;
    uint64_t ns = 0;
  };
  static Pair measure() noexcept;

  void set_slope(const Pair& from, const Pair& to) noexcept;
  bool rate_changed(const Pair& previous, const Pair& now) const noexcept;

  Pair first_, last_;
  uint64_t ns_per_tick_q32_ = 0;  // nanoseconds per tick, 32.32 fixed point
  uint32_t rate_changes_ = 0;
  bool started_ = false;
};

}  // namespace gpuscope::capture
