// The trace's wall-clock times (CLOCK_REALTIME nanoseconds, e.g.
// ProcessMetadata.start_realtime_ns) as UTC text, one formatter for both
// sides: the capture side names files by a process's start (%t) and the
// analyzer shows it.
#pragma once

#include <cstdint>
#include <cstdio>
#include <ctime>
#include <string>

namespace gpuscope::container {

enum class UtcStyle {
  Compact,      // 20261204T101502Z: basic ISO 8601, whole seconds, safe in a file name
  Milliseconds  // 2026-12-04T10:15:02.123Z: extended ISO 8601, for people
};

inline std::string utc_time(uint64_t realtime_ns, UtcStyle style) {
  const time_t secs = static_cast<time_t>(realtime_ns / 1'000'000'000ull);
  tm parts{};
  gmtime_r(&secs, &parts);
  char buf[40];
  if (style == UtcStyle::Compact) {
    strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &parts);
    return buf;
  }
  const size_t n = strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &parts);
  std::snprintf(buf + n, sizeof buf - n, ".%03uZ", static_cast<unsigned>((realtime_ns / 1'000'000ull) % 1000));
  return buf;
}

}  // namespace gpuscope::container
