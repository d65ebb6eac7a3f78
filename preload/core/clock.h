// The one clock of gpuscope: CLOCK_MONOTONIC in nanoseconds, read through the
// vDSO (no syscall). CUPTI is told to use the same clock, so host and device
// timestamps share one axis.
#pragma once

#include <cstdint>
#include <ctime>

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

}  // namespace gpuscope::capture
