// The reader against damaged and hostile files: truncation at every k-th
// byte, random bit flips, wrong magic, newer versions, lying headers. It must
// never crash or read past the end, must name the offset of the damage, and
// must keep everything outside the damaged frame.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include "container.h"
#include "trace_reader.h"
#include "trace_summary.h"
#include "../support/sample_trace.h"

namespace gpuscope::reader {
namespace {

using test::SampleTrace;

struct ReadResult {
  bool opened = false;
  std::string error;
  uint64_t records = 0;
  std::vector<uint32_t> sequences;
  std::vector<uint64_t> fingerprints;  // of each delivered chunk's records
  std::vector<Problem> problems;
  ReadStats stats;
};

ReadResult read_bytes(std::span<const uint8_t> bytes) {
  ReadResult r;
  TraceReader reader;
  r.opened = reader.open(memory_source(bytes), "trace", &r.error);
  if (!r.opened) return r;
  reader.read([&](const ChunkView& v) {
    r.sequences.push_back(v.sequence);
    r.records += v.api_calls.size() + v.copies.size() + v.memsets.size() + v.kernels.size() +
                 v.syncs.size() + v.allocs.size() + v.cpu_samples.size() + v.markers.size() + v.gpu_samples.size();
    uint64_t h = 1469598103934665603ull;  // FNV-1a over every record's bytes
    const auto mix = [&](const auto& span) {
      const auto* p = reinterpret_cast<const uint8_t*>(span.data());
      for (size_t i = 0; i < span.size_bytes(); ++i) h = (h ^ p[i]) * 1099511628211ull;
    };
    mix(v.api_calls), mix(v.copies), mix(v.memsets), mix(v.kernels);
    mix(v.syncs), mix(v.allocs), mix(v.cpu_samples), mix(v.markers), mix(v.gpu_samples);
    r.fingerprints.push_back(h);
  });
  r.problems = reader.problems();
  r.stats = reader.stats();
  return r;
}

bool has_problem(const ReadResult& r, ProblemKind kind) {
  for (const auto& p : r.problems)
    if (p.kind == kind) return true;
  return false;
}

const SampleTrace& sample() {
  static const SampleTrace t = test::make_sample_trace(6, 40);
  return t;
}

TEST(ReaderDamage, IntactTraceReadsCompletely) {
  const auto r = read_bytes(sample().bytes);
  ASSERT_TRUE(r.opened) << r.error;
  EXPECT_EQ(r.records, sample().records);
  EXPECT_EQ(r.sequences.size(), sample().frame_offsets.size());
  EXPECT_TRUE(r.problems.empty()) << r.problems.front().message;
}

TEST(ReaderDamage, TruncationAtEveryKthByteKeepsEveryCompleteFrame) {
  const SampleTrace& t = sample();
  for (size_t cut = 0; cut <= t.bytes.size(); cut += 3) {
    const auto r = read_bytes(std::span(t.bytes.data(), cut));
    if (cut < sizeof(container::FileHeader)) {
      EXPECT_FALSE(r.opened);
      EXPECT_NE(r.error.find("not a gpuscope trace"), std::string::npos) << r.error;
      continue;
    }
    ASSERT_TRUE(r.opened) << "cut " << cut << ": " << r.error;
    size_t complete = 0;
    while (complete < t.frame_ends.size() && t.frame_ends[complete] <= cut) ++complete;
    // A frame whose payload is whole but whose padding was cut still reads.
    EXPECT_GE(r.sequences.size(), complete) << "cut " << cut;
    EXPECT_LE(r.sequences.size(), complete + 1) << "cut " << cut;
    EXPECT_LE(r.records, t.records);
    EXPECT_FALSE(has_problem(r, ProblemKind::CorruptFrame)) << "cut " << cut;
    const bool at_boundary = cut == sizeof(container::FileHeader) ||
                             std::find(t.frame_ends.begin(), t.frame_ends.end(), cut) != t.frame_ends.end();
    if (!at_boundary && r.sequences.size() == complete) {
      ASSERT_TRUE(has_problem(r, ProblemKind::Truncated)) << "cut " << cut;
      for (const auto& p : r.problems) {
        if (p.kind == ProblemKind::Truncated) {
          EXPECT_LE(p.offset, cut);
        }
      }
    }
    EXPECT_EQ(has_problem(r, ProblemKind::NoTotals), r.sequences.size() < t.frame_offsets.size());
  }
}

// Which frame (index) holds byte `pos` in its header or payload; -1 for the
// file header, -2 for padding.
int frame_holding(const SampleTrace& t, size_t pos) {
  if (pos < sizeof(container::FileHeader)) return -1;
  for (size_t f = 0; f < t.frame_offsets.size(); ++f) {
    container::FrameHeader h;
    std::memcpy(&h, t.bytes.data() + t.frame_offsets[f], sizeof h);
    const size_t payload_end = t.frame_offsets[f] + sizeof h + h.payload_size;
    if (pos >= t.frame_offsets[f] && pos < payload_end) return static_cast<int>(f);
  }
  return -2;
}

// zstd has a few bits whose value does not change what a frame decodes to
// (its content checksum still matches): such a flip leaves the frame whole.
// Any other flip must cost exactly the frame it lands in, reported at that
// frame's offset, and every other frame must read back unchanged.
TEST(ReaderDamage, RandomBitFlipsCostOnlyTheFrameTheyHit) {
  const SampleTrace& t = sample();
  const ReadResult intact = read_bytes(t.bytes);
  const char* env = std::getenv("GPUSCOPE_FLIP_COUNT");
  const int flips = env != nullptr ? std::atoi(env) : 100'000;
  std::mt19937_64 rng(2024);
  std::vector<uint8_t> damaged;
  for (int i = 0; i < flips; ++i) {
    damaged = t.bytes;
    const size_t pos = rng() % damaged.size();
    damaged[pos] ^= static_cast<uint8_t>(1u << (rng() % 8));
    const auto r = read_bytes(damaged);
    const int hit = frame_holding(t, pos);
    if (hit == -1) {
      ASSERT_FALSE(r.opened) << "flip at " << pos << " in the file header went unnoticed";
      continue;
    }
    ASSERT_TRUE(r.opened) << r.error;
    ASSERT_LE(r.records, t.records);
    for (size_t k = 0; k < r.sequences.size(); ++k)
      ASSERT_EQ(r.fingerprints[k], intact.fingerprints[r.sequences[k]]) << "flip at byte " << pos;
    if (r.sequences.size() == t.frame_offsets.size()) continue;  // harmless flip
    ASSERT_GE(hit, 0) << "flip in padding at byte " << pos << " cost a frame";
    ASSERT_EQ(r.sequences.size(), t.frame_offsets.size() - 1) << "flip at byte " << pos;
    for (uint32_t s : r.sequences) ASSERT_NE(s, static_cast<uint32_t>(hit));
    bool named = false;
    for (const auto& p : r.problems)
      named |= p.kind == ProblemKind::CorruptFrame && p.offset == t.frame_offsets[hit];
    ASSERT_TRUE(named) << "flip at byte " << pos << " not reported at frame offset " << t.frame_offsets[hit];
  }
}

TEST(ReaderDamage, WrongMagicIsNotATrace) {
  std::vector<uint8_t> bytes = sample().bytes;
  bytes[0] = 'X';
  const auto r = read_bytes(bytes);
  EXPECT_FALSE(r.opened);
  EXPECT_EQ(r.error, "trace is not a gpuscope trace (no gpuscope file header at offset 0)");
}

container::FileHeader header_with_version(uint16_t major, uint16_t minor) {
  container::FileHeader h = container::make_file_header();
  h.format_major = major;
  h.format_minor = minor;
  h.header_crc = container::crc32c(&h, offsetof(container::FileHeader, header_crc));
  return h;
}

TEST(ReaderDamage, NewerMajorVersionIsRefusedNamingBoth) {
  std::vector<uint8_t> bytes = sample().bytes;
  const auto h = header_with_version(2, 3);
  std::memcpy(bytes.data(), &h, sizeof h);
  const auto r = read_bytes(bytes);
  EXPECT_FALSE(r.opened);
  EXPECT_EQ(r.error, "trace: trace format 2.3 is newer than this gpuscope supports (" +
                         std::to_string(container::kFormatMajor) + "." + std::to_string(container::kFormatMinor) +
                         "); read it with a newer gpuscope");
}

TEST(ReaderDamage, NewerMinorVersionIsReadWithANote) {
  std::vector<uint8_t> bytes = sample().bytes;
  const auto h = header_with_version(1, 9);
  std::memcpy(bytes.data(), &h, sizeof h);
  const auto r = read_bytes(bytes);
  ASSERT_TRUE(r.opened);
  EXPECT_EQ(r.records, sample().records);
  EXPECT_TRUE(has_problem(r, ProblemKind::NewerMinor));
}

TEST(ReaderDamage, LyingFrameSizeIsRefusedWithoutAllocating) {
  std::vector<uint8_t> bytes = sample().bytes;
  const uint64_t at = sample().frame_offsets[2];
  const auto h = container::make_frame_header(0xFFFFFFF0u, 0xFFFFFFF0u, 2, 0);
  std::memcpy(bytes.data() + at, &h, sizeof h);
  const auto r = read_bytes(bytes);
  ASSERT_TRUE(r.opened);
  bool named = false;
  for (const auto& p : r.problems)
    named |= p.kind == ProblemKind::CorruptFrame && p.offset == at &&
             p.message.find("claims 4294967280 bytes") != std::string::npos;
  EXPECT_TRUE(named);
  EXPECT_EQ(r.sequences.size(), sample().frame_offsets.size() - 1);  // resynchronized after it
}

TEST(ReaderDamage, ImpossibleRecordValuesAreSkippedAndCounted) {
  capture::ChunkBuilder b;
  b.add(fb::Copy(100, 10, 1, 4096, 0, static_cast<fb::CopyDirection>(200), fb::MemoryKind::Pageable,
                 fb::MemoryKind::Device, fb::Source::Host, 0, 0));
  b.add(fb::Copy(200, 10, 2, 4096, 0, fb::CopyDirection::HostToDevice, fb::MemoryKind::Pageable,
                 fb::MemoryKind::Device, fb::Source::Host, 0, 0));
  b.add(fb::Sync(300, uint64_t{1} << 63, 3, 0, fb::SyncKind::Device, fb::Source::Host, 0, 0));
  capture::FrameEncoder enc(1);
  const auto header = capture::file_header_bytes();
  std::vector<uint8_t> bytes(reinterpret_cast<const uint8_t*>(header.data()),
                             reinterpret_cast<const uint8_t*>(header.data()) + header.size());
  const auto frame = enc.encode(b.build(), 0);
  bytes.insert(bytes.end(), reinterpret_cast<const uint8_t*>(frame.data()),
               reinterpret_cast<const uint8_t*>(frame.data()) + frame.size());
  const auto r = read_bytes(bytes);
  ASSERT_TRUE(r.opened);
  EXPECT_EQ(r.records, 1u);
  EXPECT_EQ(r.stats.records_invalid, 2u);
  EXPECT_TRUE(has_problem(r, ProblemKind::InvalidRecords));
}

TEST(ReaderDamage, MissingFramesAreNoticedBySequence) {
  const SampleTrace& t = sample();
  std::vector<uint8_t> bytes(t.bytes.begin(), t.bytes.begin() + static_cast<long>(t.frame_offsets[2]));
  bytes.insert(bytes.end(), t.bytes.begin() + static_cast<long>(t.frame_offsets[4]), t.bytes.end());
  const auto r = read_bytes(bytes);
  ASSERT_TRUE(r.opened);
  EXPECT_EQ(r.sequences, (std::vector<uint32_t>{0, 1, 4, 5}));
  EXPECT_TRUE(has_problem(r, ProblemKind::MissingFrames));
}

}  // namespace
}  // namespace gpuscope::reader
