#include "clock.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace gpuscope::capture {

namespace detail {
std::atomic<bool> g_timestamps_in_ticks{false};
}

bool tsc_timestamps_usable() {
#if defined(__x86_64__)
  const char* choice = std::getenv("GPUSCOPE_CLOCK");
  if (choice != nullptr && std::strcmp(choice, "monotonic") == 0) return false;
  std::ifstream in("/sys/devices/system/clocksource/clocksource0/current_clocksource");
  std::string source;
  in >> source;
  return source == "tsc";
#else
  return false;
#endif
}

TickConverter::Pair TickConverter::measure() noexcept {
  // Bracket the tick read between two clock reads and take the midpoint.
  Pair p;
  const uint64_t before = monotonic_ns();
#if defined(__x86_64__)
  p.ticks = __rdtsc();
#endif
  const uint64_t after = monotonic_ns();
  p.ns = before + (after - before) / 2;
  return p;
}

void TickConverter::calibrate() noexcept {
  const Pair now = measure();
  if (!started_) {
    first_ = last_ = now;
    started_ = true;
    // A first guess from a short busy wait; every later calibration refines it.
    Pair later;
    do later = measure();
    while (later.ns - first_.ns < 200'000);
    set_slope(first_, later);
    last_ = later;
    return;
  }
  last_ = now;
  if (last_.ticks > first_.ticks) set_slope(first_, last_);
}

void TickConverter::set_slope(const Pair& from, const Pair& to) noexcept {
  const unsigned __int128 ns = static_cast<unsigned __int128>(to.ns - from.ns) << 32;
  ns_per_tick_q32_ = static_cast<uint64_t>(ns / (to.ticks - from.ticks));
}

}  // namespace gpuscope::capture
