#include "clock_fit.h"

#include <cmath>

namespace gpuscope::cupti {

uint64_t LinearClock::operator()(uint64_t cupti_ns) const {
  // Differences in double keep 53 bits: exact for the hours a run spans.
  const double delta = static_cast<double>(static_cast<int64_t>(cupti_ns - cupti_ref)) * slope;
  const int64_t mapped = static_cast<int64_t>(monotonic_ref) + static_cast<int64_t>(std::llround(delta));
  return mapped < 0 ? 0 : static_cast<uint64_t>(mapped);
}

LinearClock fit_clock(std::span<const ClockPair> pairs) {
  if (pairs.empty()) return {};
  const ClockPair& last = pairs.back();
  LinearClock through_last{last.cupti_ns, last.monotonic_ns, 1.0};
  if (pairs.size() == 1) return through_last;
  // Centre on the first pair so the sums stay small and exact enough.
  const ClockPair& o = pairs.front();
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const ClockPair& p : pairs) {
    const double x = static_cast<double>(static_cast<int64_t>(p.cupti_ns - o.cupti_ns));
    const double y = static_cast<double>(static_cast<int64_t>(p.monotonic_ns - o.monotonic_ns));
    n += 1, sx += x, sy += y, sxx += x * x, sxy += x * y;
  }
  const double denom = n * sxx - sx * sx;
  if (denom <= 0) return through_last;
  const double slope = (n * sxy - sx * sy) / denom;
  if (!std::isfinite(slope) || std::fabs(slope - 1.0) > 1e-3) return through_last;
  const double intercept = (sy - slope * sx) / n;  // monotonic - o.monotonic at x = 0
  const int64_t ref = static_cast<int64_t>(o.monotonic_ns) + static_cast<int64_t>(std::llround(intercept));
  return {o.cupti_ns, ref < 0 ? 0 : static_cast<uint64_t>(ref), slope};
}

}  // namespace gpuscope::cupti
