// A Python frame inside a recorded call stack (format 1.6): one 64-bit
// value in Stack.frames, told apart from a return address by bit 63 (no
// user-space address has it). Written by the capture side, read by the
// analyzer's symbolizer; see PythonCode in gpuscope.fbs.
#pragma once

#include <cstdint>

namespace gpuscope::container {

inline constexpr uint64_t kPythonFrameBit = uint64_t{1} << 63;
inline constexpr uint64_t kPythonCodeMask = 0x0000FFFFFFFFFFF8ull;  // bits 3..47
inline constexpr uint32_t kPythonIndexUnknown = 0x7FFF;               // bits 48..62 all set
inline constexpr uint64_t kPythonCallEndBit = 1;  // outermost frame of one interpreter-loop call

inline bool is_python_frame(uint64_t v) { return (v & kPythonFrameBit) != 0; }
// Whether `code` (a code object's address) fits the encoding: 8-aligned, below 2^48.
inline bool python_code_encodable(uint64_t code) { return (code & ~kPythonCodeMask) == 0 && code != 0; }

inline uint64_t encode_python_frame(uint64_t code, uint32_t index, bool call_end) {
  const uint64_t i = index < kPythonIndexUnknown ? index : kPythonIndexUnknown;
  return kPythonFrameBit | (i << 48) | (code & kPythonCodeMask) | (call_end ? kPythonCallEndBit : 0);
}
inline uint64_t python_frame_code(uint64_t v) { return v & kPythonCodeMask; }
inline uint32_t python_frame_index(uint64_t v) { return static_cast<uint32_t>(v >> 48) & kPythonIndexUnknown; }
inline bool python_frame_ends_call(uint64_t v) { return (v & kPythonCallEndBit) != 0; }

}  // namespace gpuscope::container
