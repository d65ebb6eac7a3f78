// The capture-range grammar: `gpuscope run --capture-range` and
// `--capture-range-end` check their values with these parsers, and the
// library (capture/capture_window.cpp) reads GPUSCOPE_CAPTURE_RANGE and
// GPUSCOPE_CAPTURE_RANGE_END with them, so a value one side takes the other
// takes too.
//   range:  cudaProfilerApi | nvtx:MESSAGE[@DOMAIN]  (split at the last '@'; MESSAGE not empty)
//   end:    stop | repeat | repeat:N  (N > 0)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace gpuscope::protocol {

struct CaptureRange {
  enum class Range : uint8_t { None, ProfilerApi, Nvtx };
  Range range = Range::None;
  std::string nvtx_message;  // Range::Nvtx: the range's message, exactly
  std::string nvtx_domain;   // and its domain; empty: the default domain
};

// What the grammars take, in the words of a message ("expected ...").
inline constexpr std::string_view kCaptureRangeGrammar = "cudaProfilerApi or nvtx:MESSAGE[@DOMAIN]";
inline constexpr std::string_view kRangeEndGrammar = "stop, repeat or repeat:N (N > 0)";

// The longest GPUSCOPE_DELAY_MS and GPUSCOPE_DURATION_MS: a year.
inline constexpr uint64_t kMaxWindowMs = 365ull * 86'400'000;

// The range's value ("" = none) into `out`'s range fields; false for
// anything the grammar does not take.
bool parse_capture_range(std::string_view value, CaptureRange* out);

// The end policy's value ("" = stop) as the windows allowed (0: no limit).
bool parse_range_end(std::string_view value, uint32_t* max_windows);

// Whether the grammars take `value` (the result is not needed).
bool is_capture_range(std::string_view value);
bool is_range_end(std::string_view value);

// The value parse_capture_range reads back as `range` ("" for none).
std::string capture_range_text(const CaptureRange& range);

}  // namespace gpuscope::protocol
