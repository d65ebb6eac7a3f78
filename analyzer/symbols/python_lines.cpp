#include "python_lines.h"

#include <cstddef>
#include <cstdlib>

namespace gpuscope::analyzer::python {
namespace {

constexpr uint32_t kMinorMask = 0xFFFF0000u;
constexpr uint32_t kPython39 = 0x03090000u;
constexpr uint32_t kPython310 = 0x030A0000u;
constexpr uint32_t kPython311 = 0x030B0000u;
constexpr uint32_t kPython313 = 0x030D0000u;
constexpr uint64_t kCodeUnitBytes = 2;

// Lines are accumulated from deltas in 64 bits; a running line this far from
// zero only comes from a damaged table, and stopping there keeps every sum
// far from overflow (one delta is under 2^36, see EntryReader::varint).
constexpr int64_t kLineLimit = int64_t{1} << 31;

bool line_plausible(int64_t line) { return std::llabs(line) < kLineLimit; }

// A decoded line as the answer: lines start at 1, anything else is unknown.
int as_answer(int64_t line) { return line > 0 && line < kLineLimit ? static_cast<int>(line) : 0; }

// 3.9's co_lnotab: (byte increment, signed line increment) pairs; a line
// holds from its entry's address until the next entry that moves past the
// address asked. The table ends at the last line start, so every address
// after it is on the last line.
int lnotab_line(std::span<const uint8_t> table, int first_line, uint32_t index) {
  const uint64_t wanted = uint64_t{index} * kCodeUnitBytes;
  uint64_t address = 0;
  int64_t line = first_line;
  for (size_t at = 0; at + 1 < table.size(); at += 2) {
    address += table[at];
    if (address > wanted) break;
    line += static_cast<int8_t>(table[at + 1]);
    if (!line_plausible(line)) return 0;
  }
  return as_answer(line);
}

// 3.10's co_linetable (PEP 626): (byte length, signed line delta) pairs, each
// covering [start, start + length) of the bytecode; a delta of -128 marks a
// range without a line. Zero-length entries only carry their line delta on.
int linetable310_line(std::span<const uint8_t> table, int first_line, uint32_t index) {
  constexpr int8_t kNoLine = -128;
  const uint64_t wanted = uint64_t{index} * kCodeUnitBytes;
  uint64_t start = 0;
  int64_t line = first_line;
  for (size_t at = 0; at + 1 < table.size(); at += 2) {
    const uint64_t end = start + table[at];
    const auto delta = static_cast<int8_t>(table[at + 1]);
    if (delta != kNoLine) line += delta;
    if (!line_plausible(line)) return 0;
    if (wanted < end) return delta == kNoLine ? 0 : as_answer(line);
    start = end;
  }
  return 0;
}

// Reads the bytes that follow a location entry's first byte. Every byte of
// an entry but the first has bit 7 clear; meeting a set one (the next entry)
// or the table's end inside an entry means the table is damaged.
class EntryReader {
 public:
  EntryReader(std::span<const uint8_t> table, size_t at) : table_(table), at_(at) {}

  bool skip(size_t bytes) {
    if (table_.size() - at_ < bytes) return fail();
    at_ += bytes;
    return true;
  }
  // Unsigned: 6-bit chunks, least significant first, bit 6 = more follow.
  // Real deltas fit in 32 bits; more than six chunks is damage.
  bool varint(uint64_t* value) {
    constexpr int kMaxShift = 36;
    *value = 0;
    for (int shift = 0; shift < kMaxShift; shift += 6) {
      if (at_ >= table_.size() || (table_[at_] & 0x80) != 0) return fail();
      const uint8_t chunk = table_[at_++];
      *value |= uint64_t{chunk & 0x3Fu} << shift;
      if ((chunk & 0x40) == 0) return true;
    }
    return fail();
  }
  // Signed: the unsigned value's low bit is the sign, the rest the magnitude.
  bool svarint(int64_t* value) {
    uint64_t raw = 0;
    if (!varint(&raw)) return false;
    const auto magnitude = static_cast<int64_t>(raw >> 1);
    *value = (raw & 1) != 0 ? -magnitude : magnitude;
    return true;
  }
  bool skip_varints(int count) {
    uint64_t ignored = 0;
    for (int i = 0; i < count; ++i) {
      if (!varint(&ignored)) return false;
    }
    return true;
  }
  size_t position() const { return at_; }

 private:
  static bool fail() { return false; }
  std::span<const uint8_t> table_;
  size_t at_;
};

// One location entry's effect on the start line: whether its instructions
// have a line, and the delta from the previous entry's line.
struct LineStep {
  bool has_line = true;
  int64_t delta = 0;
};

// Decodes the bytes after an entry's first byte for `kind` (bits 3-6 of that
// byte): 15 no location, 14 long form, 13 no columns, 10-12 one line form
// (delta = kind - 10, two column bytes), 0-9 short form (one column byte).
bool read_line_step(EntryReader* reader, unsigned kind, LineStep* step) {
  switch (kind) {
    case 15:
      step->has_line = false;
      return true;
    case 14:
      return reader->svarint(&step->delta) && reader->skip_varints(3);
    case 13:
      return reader->svarint(&step->delta);
    case 10:
    case 11:
    case 12:
      step->delta = static_cast<int64_t>(kind) - 10;
      return reader->skip(2);
    default:
      return reader->skip(1);
  }
}

// 3.11-3.13's location table (PEP 657): entries of 1-8 code units, each
// starting with a byte 1kkkklll (kind, length - 1), the start line kept as
// a delta from the previous entry's (co_firstlineno for the first).
int location_table_line(std::span<const uint8_t> table, int first_line, uint32_t index) {
  uint64_t start = 0;
  int64_t line = first_line;
  size_t at = 0;
  while (at < table.size()) {
    const uint8_t head = table[at];
    if ((head & 0x80) == 0) return 0;
    const uint64_t end = start + (head & 0x07u) + 1;
    EntryReader reader(table, at + 1);
    LineStep step;
    if (!read_line_step(&reader, (head >> 3) & 0x0Fu, &step)) return 0;
    line += step.delta;
    if (!line_plausible(line)) return 0;
    if (index < end) return step.has_line ? as_answer(line) : 0;
    start = end;
    at = reader.position();
  }
  return 0;
}

bool all_digits(std::string_view text) {
  if (text.empty()) return false;
  for (const char c : text) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// "python3.11" (or the free-threaded "python3.13t") right under lib/ or
// lib64/ is a standard library directory, whatever the prefix above it.
bool is_stdlib_dir(std::string_view parent, std::string_view name) {
  if (parent != "lib" && parent != "lib64") return false;
  if (!name.starts_with("python")) return false;
  std::string_view version = name.substr(6);
  if (version.ends_with('t')) version.remove_suffix(1);
  const size_t dot = version.find('.');
  return dot != std::string_view::npos && all_digits(version.substr(0, dot)) && all_digits(version.substr(dot + 1));
}

// The zipped standard library: python311.zip.
bool is_stdlib_zip(std::string_view name) {
  constexpr std::string_view kPrefix = "python", kSuffix = ".zip";
  if (!name.starts_with(kPrefix) || !name.ends_with(kSuffix)) return false;
  return all_digits(name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size()));
}

bool is_library_component(std::string_view parent, std::string_view name) {
  return name == "site-packages" || name == "dist-packages" || is_stdlib_dir(parent, name) ||
         is_stdlib_zip(name);
}

}  // namespace

bool is_user_file(std::string_view path) {
  if (path.starts_with("<frozen ")) return false;
  std::string_view parent;
  size_t start = 0;
  while (start < path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string_view::npos) break;  // the file's own name decides nothing
    const std::string_view name = path.substr(start, slash - start);
    if (is_library_component(parent, name)) return false;
    parent = name;
    start = slash + 1;
  }
  return true;
}

int line_at(uint32_t version_hex, std::span<const uint8_t> line_table, int first_line, uint32_t index) {
  if (index == kUnknownIndex) return 0;
  const uint32_t minor = version_hex & kMinorMask;
  if (minor == kPython39) return lnotab_line(line_table, first_line, index);
  if (minor == kPython310) return linetable310_line(line_table, first_line, index);
  if (minor >= kPython311 && minor <= kPython313) return location_table_line(line_table, first_line, index);
  return 0;
}

}  // namespace gpuscope::analyzer::python
