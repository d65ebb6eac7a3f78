// The Python line decoder on hand-built tables (the formats as CPython's
// documentation describes them: Objects/lnotab_notes.txt for 3.9/3.10, the
// location table of InternalDocs/code_objects.md for 3.11+) and on hostile
// ones: truncated, oversized, nonsense. And which files are the user's own.
#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <random>
#include <vector>

#include "python_lines.h"

namespace gpuscope::analyzer::python {
namespace {

constexpr uint32_t k39 = 0x030912F0, k310 = 0x030A0DF0, k311 = 0x030B07F0, k312 = 0x030C01F0, k313 = 0x030D00F0;
constexpr uint32_t kAllVersions[] = {k39, k310, k311, k312, k313};

using Table = std::vector<uint8_t>;

// 3.11+ entry head: 1 kkkk lll (kind, length - 1).
constexpr uint8_t head(unsigned kind, unsigned length) { return static_cast<uint8_t>(0x80 | kind << 3 | (length - 1)); }

TEST(PythonLines, Lnotab39PairsMoveTheLineAtTheirAddress) {
  // From line 10: +1 at byte 6, +2 at byte 10, -3 at byte 10 + 250 + 20.
  const Table table = {6, 1, 4, 2, 250, 0, 20, static_cast<uint8_t>(-3)};
  EXPECT_EQ(line_at(k39, table, 10, 0), 10);
  EXPECT_EQ(line_at(k39, table, 10, 2), 10);  // byte 4
  EXPECT_EQ(line_at(k39, table, 10, 3), 11);  // byte 6
  EXPECT_EQ(line_at(k39, table, 10, 5), 13);  // byte 10
  EXPECT_EQ(line_at(k39, table, 10, 139), 13);
  EXPECT_EQ(line_at(k39, table, 10, 140), 10);  // byte 280
  EXPECT_EQ(line_at(k39, table, 10, 5000), 10) << "past the last entry: the last line";
  EXPECT_EQ(line_at(k39, {}, 7, 3), 7) << "no entries: every instruction on the first line";
}

TEST(PythonLines, Linetable310RangesAndLinelessRanges) {
  // From line 20: [0,4) +0, [4,4) +127 carried on, [4,10) +1, [10,12) none, [12,14) -2.
  const Table table = {4, 0, 0, 127, 6, 1, 2, 0x80, 2, static_cast<uint8_t>(-2)};
  EXPECT_EQ(line_at(k310, table, 20, 0), 20);
  EXPECT_EQ(line_at(k310, table, 20, 1), 20);
  EXPECT_EQ(line_at(k310, table, 20, 2), 148);
  EXPECT_EQ(line_at(k310, table, 20, 4), 148);
  EXPECT_EQ(line_at(k310, table, 20, 5), 0) << "a -128 delta: no line";
  EXPECT_EQ(line_at(k310, table, 20, 6), 146) << "the lineless range does not move the line";
  EXPECT_EQ(line_at(k310, table, 20, 7), 0) << "past the table";
  EXPECT_EQ(line_at(k310, {}, 20, 0), 0);
}

TEST(PythonLines, LocationTableEveryEntryKind) {
  const Table table = {
      head(3, 2), 0x21,              // short form: same line, 2 units
      head(11, 1), 4, 9,             // one line form: +1
      head(15, 1),                   // no location, 1 unit
      head(13, 3), 0x07,             // no columns: svarint 7 = -3
      head(14, 8), 0x50, 0x06, 1, 2, 3,  // long form: svarint 400 = +200 (0x50 0x06), end line, columns
      head(12, 1), 1, 2,             // one line form: +2
  };
  for (const uint32_t version : {k311, k312, k313}) {
    EXPECT_EQ(line_at(version, table, 100, 0), 100);
    EXPECT_EQ(line_at(version, table, 100, 1), 100);
    EXPECT_EQ(line_at(version, table, 100, 2), 101);
    EXPECT_EQ(line_at(version, table, 100, 3), 0) << "no location";
    EXPECT_EQ(line_at(version, table, 100, 4), 98);
    EXPECT_EQ(line_at(version, table, 100, 6), 98);
    EXPECT_EQ(line_at(version, table, 100, 7), 298);
    EXPECT_EQ(line_at(version, table, 100, 14), 298);
    EXPECT_EQ(line_at(version, table, 100, 15), 300);
    EXPECT_EQ(line_at(version, table, 100, 16), 0) << "past the table";
  }
}

TEST(PythonLines, UnknownIndexAndUnsupportedVersionsAreUnknown) {
  const Table lnotab = {2, 1};
  const Table locations = {head(13, 8), 0x02};
  for (const uint32_t version : kAllVersions) {
    EXPECT_EQ(line_at(version, version == k39 ? lnotab : locations, 5, kUnknownIndex), 0);
  }
  for (const uint32_t version : {0u, 0x030807F0u, 0x030E00F0u, 0x040000F0u, 0xFFFFFFFFu}) {
    EXPECT_EQ(line_at(version, lnotab, 5, 0), 0) << std::hex << version;
    EXPECT_EQ(line_at(version, locations, 5, 0), 0) << std::hex << version;
  }
}

TEST(PythonLines, TruncatedLocationEntriesAreUnknown) {
  const Table truncated[] = {
      {head(13, 1), 0x43},                         // varint continues past the end
      {head(13, 1), 0x43, head(0, 1), 0x00},       // varint continues into the next entry's head
      {head(14, 1), 0x02, 0x00, 0x00},             // long form missing its last column
      {head(11, 1), 4},                            // one line form missing a column byte
      {head(5, 1)},                                // short form missing its column byte
      {0x05, head(0, 1), 0x00},                    // does not start with an entry head
  };
  for (const Table& table : truncated) {
    for (const uint32_t version : {k311, k312, k313}) {
      EXPECT_EQ(line_at(version, table, 10, 0), 0) << "table of " << table.size() << " bytes";
    }
  }
  // What is readable before the damage still answers.
  const Table damaged_later = {head(0, 2), 0x00, head(13, 1), 0x43};
  EXPECT_EQ(line_at(k311, damaged_later, 10, 1), 10);
  EXPECT_EQ(line_at(k311, damaged_later, 10, 2), 0);
}

TEST(PythonLines, HugeDeltasNeverOverflow) {
  // Six-chunk varints (the most a real table needs) add up past int range.
  Table table;
  for (int i = 0; i < 40; ++i) {
    table.insert(table.end(), {head(13, 1), 0x7E, 0x7F, 0x7F, 0x7F, 0x7F, 0x3F});  // +2^35 - 1
  }
  EXPECT_EQ(line_at(k312, table, 1, 0), 0) << "a line beyond int range is damage";
  EXPECT_EQ(line_at(k312, table, 1, 39), 0);
  // Seven chunks: longer than any real varint.
  const Table too_long = {head(13, 1), 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x01};
  EXPECT_EQ(line_at(k313, too_long, 1, 0), 0);
  // First lines at the edges of int, moved past them.
  EXPECT_EQ(line_at(k310, Table{2, 1}, INT_MAX, 0), 0);
  EXPECT_EQ(line_at(k39, Table{0, 1}, INT_MAX, 0), 0);
  EXPECT_EQ(line_at(k311, Table{head(13, 1), 0x03}, INT_MIN, 0), 0);
  EXPECT_EQ(line_at(k310, Table{2, 0}, INT_MIN, 0), 0) << "a negative line is no line";
  // Indices far past any table: no wrap-around in the byte offset.
  EXPECT_EQ(line_at(k310, Table{255, 0}, 3, UINT32_MAX - 1), 0);
  EXPECT_EQ(line_at(k311, Table{head(0, 8), 0}, 3, UINT32_MAX - 1), 0);
}

TEST(PythonLines, RandomTablesNeverCrashOrAnswerNonsense) {
  std::mt19937 random(20);
  std::uniform_int_distribution<int> byte(0, 255), length(0, 64);
  for (int round = 0; round < 3000; ++round) {
    Table table(length(random));
    for (uint8_t& b : table) b = static_cast<uint8_t>(byte(random));
    const uint32_t version = kAllVersions[round % 5];
    for (uint32_t index = 0; index < 80; index += 3) {
      EXPECT_GE(line_at(version, table, round % 7, index), 0);
    }
  }
}

TEST(PythonLines, UserFilesAreTheProgramsOwn) {
  for (const char* path : {"/home/me/train.py", "train.py", "./models/net.py", "<string>", "<stdin>",
                           "/srv/app/lib/helpers.py", "/home/me/python3.11/script.py", "/opt/lib/pythonic/x.py",
                           "/home/me/lib/python3/tool.py", "/home/me/site-packages.py", "/work/lib/python3.x/a.py"}) {
    EXPECT_TRUE(is_user_file(path)) << path;
  }
}

TEST(PythonLines, LibraryFilesAreNotTheUsers) {
  for (const char* path : {
           "/usr/lib/python3/dist-packages/numpy/core/fromnumeric.py",
           "/home/me/.venv/lib/python3.11/site-packages/torch/nn/modules/module.py",
           "/usr/local/lib/python3.12/dist-packages/torch/cuda/__init__.py",
           "/usr/lib/python3.11/threading.py",
           "/usr/lib64/python3.9/concurrent/futures/thread.py",
           "/root/.pyenv/versions/3.11.7/lib/python3.11/json/decoder.py",
           "/root/.pyenv/versions/3.11.7/lib/python3.11/lib-dynload/_ctypes.so",
           "/home/me/.venv/lib/python3.13t/asyncio/events.py",
           "/usr/lib/python311.zip/encodings/utf_8.py",
           "<frozen importlib._bootstrap>",
           "<frozen runpy>",
           "lib/python3.10/site-packages/a.py",
           "/home/me/.local/lib/python3.10/site-packages/transformers/trainer.py",
           "/opt/app/site-packages/yaml/reader.py",  // a site directory put on sys.path by hand
       }) {
    EXPECT_FALSE(is_user_file(path)) << path;
  }
}

}  // namespace
}  // namespace gpuscope::analyzer::python
