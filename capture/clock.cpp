#include "clock.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "environment.h"

namespace gpuscope::capture {

namespace detail {
std::atomic<bool> g_timestamps_in_ticks{false};
}

protocol::HotClock choose_hot_clock() {
  protocol::HostClockFacts facts;
  facts.current_clocksource = protocol::read_current_clocksource(protocol::kLiveClocksourceDir);
  const char* choice = std::getenv(protocol::env::kClock);
  facts.monotonic_asked = choice != nullptr && std::strcmp(choice, protocol::env::kClockMonotonic) == 0;
  if (facts.current_clocksource != "tsc") {  // the common case needs neither
    facts.available_clocksource = protocol::read_available_clocksource(protocol::kLiveClocksourceDir);
    facts.invariant_tsc = protocol::cpu_has_invariant_tsc();
  }
  return protocol::choose_hot_clock(facts);
}

// Brackets a tick read between two clock reads and takes the midpoint. A
// thread preempted inside the bracket would put the pair milliseconds off
// (and with it every slope derived from it), so the narrowest of several
// tries is kept; a bracket under a microsecond is taken at once.
TickConverter::Pair TickConverter::measure() noexcept {
  Pair best;
  uint64_t best_width = UINT64_MAX;
  for (int attempt = 0; attempt < 32 && best_width > 1000; ++attempt) {
    const uint64_t before = monotonic_ns();
#if defined(__x86_64__)
    const uint64_t ticks = __rdtsc();
#else
    const uint64_t ticks = 0;
#endif
    const uint64_t after = monotonic_ns();
    if (after - before < best_width) {
      best_width = after - before;
      best = {ticks, before + (after - before) / 2};
    }
  }
  return best;
}

void TickConverter::start() noexcept {
  first_ = last_ = measure();
  started_ = true;
}

void TickConverter::calibrate() noexcept {
  if (!started_) start();
  // The slope needs some distance from the first pair: 100 us keeps a
  // 1 us bracket error under 1 %, and every later pair shrinks it further.
  Pair now;
  do now = measure();
  while (now.ns - first_.ns < 100'000);
  calibrate_at(now.ticks, now.ns);
}

void TickConverter::calibrate_at(uint64_t ticks, uint64_t ns) noexcept {
  if (!started_) {
    first_ = last_ = {ticks, ns};
    started_ = true;
    return;
  }
  const Pair previous = last_;
  last_ = {ticks, ns};
  if (rate_changed(previous, last_)) {
    first_ = previous;
    ++rate_changes_;
  }
  set_slope(first_, last_);
}

// Judged once there is a slope from an earlier span than this one.
bool TickConverter::rate_changed(const Pair& previous, const Pair& now) const noexcept {
  if (ns_per_tick_q32_ == 0 || previous.ns == first_.ns || now.ticks <= previous.ticks ||
      now.ns - previous.ns < kRateSpanNs)
    return false;
  const double recent = static_cast<double>(now.ns - previous.ns) / static_cast<double>(now.ticks - previous.ticks);
  const double overall = static_cast<double>(ns_per_tick_q32_) / 4294967296.0;
  return recent > overall * (1 + kRateChange) || recent < overall * (1 - kRateChange);
}

void TickConverter::set_slope(const Pair& from, const Pair& to) noexcept {
  if (to.ticks <= from.ticks) return;  // no TSC here (or it did not move): keep the last slope
  const unsigned __int128 ns = static_cast<unsigned __int128>(to.ns - from.ns) << 32;
  ns_per_tick_q32_ = static_cast<uint64_t>(ns / (to.ticks - from.ticks));
}

}  // namespace gpuscope::capture
