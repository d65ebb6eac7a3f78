// Fuzz target: a CPython line table from a hostile trace
// (analyzer/symbols/python_lines.h). Input: one byte choosing the
// interpreter version (3.9 + byte % 5), the instruction index (2 bytes,
// little-endian, so kUnknownIndex and indices past the table are reached),
// co_firstlineno (4 bytes, little-endian), then the raw table; the table's
// bytes are also tried as a frame's file name. Nothing may crash, read out of
// bounds or loop without end, and no answer may be a negative line. Run under
// libFuzzer (GPUSCOPE_FUZZ=ON) or replayed over seeds by replay_main.cpp.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string_view>

#include "python_lines.h"

namespace {

constexpr uint32_t kVersions[] = {0x030912F0, 0x030A0DF0, 0x030B07F0, 0x030C01F0, 0x030D00F0};
constexpr size_t kHeaderBytes = 7;

uint32_t little_endian(const uint8_t* bytes, size_t count) {
  uint32_t value = 0;
  for (size_t i = 0; i < count; ++i) value |= uint32_t{bytes[i]} << (8 * i);
  return value;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuscope::analyzer::python;
  if (size < kHeaderBytes) return 0;
  const uint32_t version = kVersions[data[0] % std::size(kVersions)];
  const uint32_t index = little_endian(data + 1, 2);
  const auto first_line = static_cast<int32_t>(little_endian(data + 3, 4));
  const std::span<const uint8_t> table(data + kHeaderBytes, size - kHeaderBytes);
  const int line = line_at(version, table, first_line, index);
  if (line < 0 || (index == kUnknownIndex && line != 0)) std::abort();
  (void)is_user_file(std::string_view(reinterpret_cast<const char*>(table.data()), table.size()));
  return 0;
}
