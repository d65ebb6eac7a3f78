// CUPTI timestamps -> CLOCK_MONOTONIC, for when CUPTI refuses our timestamp
// callback (cuptiActivityRegisterTimestampCallback must come before any
// activity is enabled; another client may have enabled one first). CUPTI's
// own clock is then CLOCK_REALTIME-based: it differs from the monotonic
// clock by an offset that NTP may slew, so a linear fit over calibration
// pairs taken during the run maps it (tracy does the same by regression).
// Pure functions: unit-tested without CUPTI.
#pragma once

#include <cstdint>
#include <span>

namespace gpuscope::cupti {

// One calibration pair: a cuptiGetTimestamp() reading and the monotonic
// time at that moment (the midpoint of two reads bracketing it).
struct ClockPair {
  uint64_t cupti_ns = 0;
  uint64_t monotonic_ns = 0;
};

// monotonic = monotonic_ref + (cupti - cupti_ref) * slope
struct LinearClock {
  uint64_t cupti_ref = 0;
  uint64_t monotonic_ref = 0;
  double slope = 1.0;

  uint64_t operator()(uint64_t cupti_ns) const;
};

// Least-squares fit of the pairs (slope 1 through the only pair when there
// is one; the identity when there is none). A fitted slope further than
// 0.1 % from 1 is not a clock drift but a clock step (someone set the wall
// clock): the slope is then 1 through the latest pair.
LinearClock fit_clock(std::span<const ClockPair> pairs);

}  // namespace gpuscope::cupti
