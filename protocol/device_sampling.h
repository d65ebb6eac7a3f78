// Sampled device tracing (GPUSCOPE_DEVICE_SAMPLING, `gpuscope run
// --device-activity sampled[:WINDOW/PERIOD]`): CUPTI's activity kinds and
// callbacks on for a window, then off until the next period starts. The
// CLI checks the value with this parser and the library reads it with the
// same one, so a value one side takes the other takes too.
//   value: WINDOW_MS/PERIOD_MS, 0 < WINDOW_MS < PERIOD_MS <= one hour
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gpuscope::protocol {

struct DeviceSampling {
  uint32_t window_ms = 0;
  uint32_t period_ms = 0;
};

inline constexpr std::string_view kDeviceSamplingGrammar = "WINDOW_MS/PERIOD_MS (0 < WINDOW_MS < PERIOD_MS <= 3600000)";
// 1 % of the time: CUPTI's ~3 us per traced launch (an H200, run 2 of
// docs/gpu-validation.md) costs 62 % of a 2 ms PyTorch step when always
// on, so about 0.6 % this way; 20 ms still holds several such steps.
inline constexpr DeviceSampling kDefaultDeviceSampling{20, 2000};

std::optional<DeviceSampling> parse_device_sampling(std::string_view value);
bool is_device_sampling(std::string_view value);
// "20 ms every 2000 ms": how the trace names the schedule.
std::string describe(const DeviceSampling& s);

}  // namespace gpuscope::protocol
