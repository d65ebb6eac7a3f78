#include "capture_range.h"

#include <charconv>

namespace gpuscope::protocol {
namespace {

constexpr std::string_view kProfilerApi = "cudaProfilerApi";
constexpr std::string_view kNvtxPrefix = "nvtx:";

// "MESSAGE[@DOMAIN]", split at the last '@' (a message may hold one).
bool parse_nvtx_range(std::string_view spec, std::string* message, std::string* domain) {
  const size_t at = spec.rfind('@');
  *message = std::string(spec.substr(0, at));
  *domain = at == std::string_view::npos ? std::string() : std::string(spec.substr(at + 1));
  return !message->empty();
}

}  // namespace

bool parse_capture_range(std::string_view value, CaptureRange* out) {
  if (value.empty()) out->range = CaptureRange::Range::None;
  else if (value == kProfilerApi) out->range = CaptureRange::Range::ProfilerApi;
  else if (value.starts_with(kNvtxPrefix) &&
           parse_nvtx_range(value.substr(kNvtxPrefix.size()), &out->nvtx_message, &out->nvtx_domain))
    out->range = CaptureRange::Range::Nvtx;
  else return false;
  return true;
}

bool parse_range_end(std::string_view v, uint32_t* max_windows) {
  if (v.empty() || v == "stop") {
    *max_windows = 1;
    return true;
  }
  if (v == "repeat") {
    *max_windows = 0;
    return true;
  }
  if (!v.starts_with("repeat:")) return false;
  v.remove_prefix(7);
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), *max_windows);
  return ec == std::errc() && end == v.data() + v.size() && *max_windows > 0;
}

bool is_capture_range(std::string_view value) {
  CaptureRange range;
  return parse_capture_range(value, &range);
}

bool is_range_end(std::string_view value) {
  uint32_t windows = 0;
  return parse_range_end(value, &windows);
}

std::string capture_range_text(const CaptureRange& c) {
  switch (c.range) {
    case CaptureRange::Range::ProfilerApi: return std::string(kProfilerApi);
    case CaptureRange::Range::Nvtx: {
      // A message with an '@' keeps its domain separator, even an empty one.
      const bool separator = !c.nvtx_domain.empty() || c.nvtx_message.find('@') != std::string::npos;
      return std::string(kNvtxPrefix) + c.nvtx_message + (separator ? "@" + c.nvtx_domain : "");
    }
    case CaptureRange::Range::None: break;
  }
  return {};
}

}  // namespace gpuscope::protocol
