#include "device_sampling.h"

#include <charconv>

namespace gpuscope::protocol {
namespace {

constexpr uint32_t kMaxPeriodMs = 3'600'000;

bool parse_ms(std::string_view text, uint32_t* out) {
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

std::optional<DeviceSampling> parse_device_sampling(std::string_view value) {
  const size_t slash = value.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  DeviceSampling s;
  if (!parse_ms(value.substr(0, slash), &s.window_ms) || !parse_ms(value.substr(slash + 1), &s.period_ms))
    return std::nullopt;
  if (s.window_ms == 0 || s.window_ms >= s.period_ms || s.period_ms > kMaxPeriodMs) return std::nullopt;
  return s;
}

bool is_device_sampling(std::string_view value) { return parse_device_sampling(value).has_value(); }

std::string describe(const DeviceSampling& s) {
  return std::to_string(s.window_ms) + " ms every " + std::to_string(s.period_ms) + " ms";
}

}  // namespace gpuscope::protocol
