// The reader against damaged and hostile files: truncation at every k-th
// byte, random bit flips, wrong magic, newer versions, lying headers. It must
// never crash or read past the end, must name the offset of the damage, and
// must keep everything outside the damaged frame.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <random>
#include <set>
#include <stdexcept>

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

ReadResult read_source(std::unique_ptr<ByteSource> source, bool read_ahead = false) {
  ReadResult r;
  TraceReader reader;
  reader.set_read_ahead(read_ahead, 0);
  r.opened = reader.open(std::move(source), "trace", &r.error);
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

ReadResult read_bytes(std::span<const uint8_t> bytes, bool read_ahead = false) {
  return read_source(memory_source(bytes), read_ahead);
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

bool same_read(const ReadResult& a, const ReadResult& b) {
  if (a.problems.size() != b.problems.size()) return false;
  for (size_t i = 0; i < a.problems.size(); ++i)
    if (describe(a.problems[i]) != describe(b.problems[i])) return false;
  return a.opened == b.opened && a.records == b.records && a.sequences == b.sequences &&
         a.fingerprints == b.fingerprints && a.stats.frames_read == b.stats.frames_read &&
         a.stats.frames_corrupt == b.stats.frames_corrupt && a.stats.bytes_skipped == b.stats.bytes_skipped &&
         a.stats.saw_totals == b.stats.saw_totals && a.stats.end_offset == b.stats.end_offset;
}

// Decoding ahead on a second thread changes nothing a pass delivers or
// finds: intact, cut anywhere, or with bytes flipped anywhere.
TEST(ReaderDamage, ReadingAheadDeliversWhatOneThreadDoes) {
  const SampleTrace& t = sample();
  EXPECT_TRUE(same_read(read_bytes(t.bytes), read_bytes(t.bytes, true)));
  for (size_t cut = 0; cut <= t.bytes.size(); cut += 97) {
    const auto part = std::span(t.bytes.data(), cut);
    EXPECT_TRUE(same_read(read_bytes(part), read_bytes(part, true))) << "cut " << cut;
  }
  std::mt19937_64 rng(7);
  for (int round = 0; round < 200; ++round) {
    auto bytes = t.bytes;
    for (int k = 0; k < 1 + round % 4; ++k) bytes[rng() % bytes.size()] ^= static_cast<uint8_t>(1 + rng() % 255);
    EXPECT_TRUE(same_read(read_bytes(bytes), read_bytes(bytes, true))) << "round " << round;
  }
}

// read_overlapped's first visitor sees every chunk the visitor sees, in the
// same order and before it (on the reading thread when reading ahead): a
// summary split between the two threads is the one-thread summary.
TEST(ReaderDamage, TheReadingThreadsVisitorSeesEveryChunkFirst) {
  const SampleTrace& t = sample();
  for (const size_t cut : {t.bytes.size(), t.bytes.size() - 11, t.frame_ends[2] + 5}) {
    const auto part = std::span(t.bytes.data(), cut);
    std::string error;
    TraceReader one;
    ASSERT_TRUE(one.open(memory_source(part), "trace", &error)) << error;
    const TraceSummary want = summarize(one);
    TraceReader two;
    two.set_read_ahead(true, 0);
    ASSERT_TRUE(two.open(memory_source(part), "trace", &error)) << error;
    SummaryBuilder split(two.info());
    RecordTally& tally = split.records();
    std::vector<uint32_t> first_seen, then_visited;  // each written by one thread, compared once joined
    std::atomic<size_t> seen_first{0};
    two.read_overlapped(
        [&](const ChunkView& v) {
          EXPECT_GT(seen_first.load(), then_visited.size()) << "the first visitor ran before";
          then_visited.push_back(v.sequence);
          split.add_tables(v);
        },
        [&](const ChunkView& v) {
          first_seen.push_back(v.sequence);
          tally.add(v);
          seen_first.fetch_add(1);
        });
    EXPECT_EQ(first_seen, then_visited) << "cut " << cut;
    const TraceSummary got = split.finish(two);
    EXPECT_EQ(got.counts.total(), want.counts.total()) << "cut " << cut;
    EXPECT_EQ(got.calls_by_function, want.calls_by_function) << "cut " << cut;
    EXPECT_EQ(got.nonzero_results, want.nonzero_results) << "cut " << cut;
    EXPECT_EQ(got.first_ns, want.first_ns);
    EXPECT_EQ(got.last_ns, want.last_ns);
    EXPECT_EQ(got.strings, want.strings);
  }
}

// A visitor that throws stops the reading thread; the reader can read again.
TEST(ReaderDamage, AThrowingVisitorStopsTheReadAheadAndTheReaderReadsAgain) {
  TraceReader reader;
  reader.set_read_ahead(true, 0);
  std::string error;
  ASSERT_TRUE(reader.open(memory_source(sample().bytes), "trace", &error)) << error;
  int visited = 0;
  EXPECT_THROW(reader.read([&](const ChunkView&) {
    if (++visited == 2) throw std::runtime_error("visitor failed");
  }),
               std::runtime_error);
  EXPECT_EQ(visited, 2);
  uint32_t frames = 0;
  reader.read([&](const ChunkView&) { ++frames; });
  EXPECT_EQ(frames, sample().frame_offsets.size());
  EXPECT_TRUE(reader.problems().empty());
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
  const auto h = header_with_version(container::kFormatMajor + 1, 3);
  std::memcpy(bytes.data(), &h, sizeof h);
  const auto r = read_bytes(bytes);
  EXPECT_FALSE(r.opened);
  EXPECT_EQ(r.error, "trace: trace format " + std::to_string(container::kFormatMajor + 1) + ".3 is newer than this gpuscope supports (" +
                         std::to_string(container::kFormatMajor) + "." + std::to_string(container::kFormatMinor) +
                         "); read it with a newer gpuscope");
}

TEST(ReaderDamage, NewerMinorVersionIsReadWithANote) {
  std::vector<uint8_t> bytes = sample().bytes;
  const auto h = header_with_version(container::kFormatMajor, container::kFormatMinor + 1);
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
             p.message.find("payload of 4294967280 bytes") != std::string::npos;
  EXPECT_TRUE(named);
  EXPECT_EQ(r.sequences.size(), sample().frame_offsets.size() - 1);  // resynchronized after it
}

// A claim over its limit is compared with that limit, and both are named:
// a small payload decompressing to too much is not "a payload over 64 MiB".
TEST(ReaderDamage, EachSizeLimitIsNamedWithItsOwnFigures) {
  const uint64_t at = sample().frame_offsets[2];
  const auto message_for = [&](uint32_t payload_size, uint32_t chunk_size) {
    std::vector<uint8_t> bytes = sample().bytes;
    const auto h = container::make_frame_header(payload_size, chunk_size, 2, 0);
    std::memcpy(bytes.data() + at, &h, sizeof h);
    for (const auto& p : read_bytes(bytes).problems)
      if (p.kind == ProblemKind::CorruptFrame && p.offset == at) return p.message;
    return std::string("(no problem at the frame)");
  };
  const std::string chunk = message_for(100, 0xFFFFFFF0u);
  EXPECT_NE(chunk.find("chunk of 4294967280 bytes decompressed"), std::string::npos) << chunk;
  EXPECT_NE(chunk.find("limit is " + std::to_string(container::kMaxChunkBytes)), std::string::npos) << chunk;
  EXPECT_EQ(chunk.find("100"), std::string::npos) << chunk;
  const std::string payload = message_for(container::kMaxFramePayload + 8, 1000);
  EXPECT_NE(payload.find("payload of " + std::to_string(container::kMaxFramePayload + 8) + " bytes"),
            std::string::npos) << payload;
  EXPECT_NE(payload.find("limit is " + std::to_string(container::kMaxFramePayload)), std::string::npos) << payload;
}

// Every kind of problem reads as one line that says its kind, and its
// offset, once.
TEST(ReaderDamage, EachProblemIsOneLineNamingItsKindAndOffsetOnce) {
  const SampleTrace& t = sample();
  std::vector<uint8_t> bytes(t.bytes.begin(), t.bytes.begin() + static_cast<long>(t.frame_offsets[3]));
  bytes.insert(bytes.end(), t.bytes.begin() + static_cast<long>(t.frame_offsets[4]),
               t.bytes.begin() + static_cast<long>(t.frame_offsets[5]) + 40);  // frame 3 missing, 5 cut
  bytes[t.frame_offsets[1] + 30] ^= 0x10;                                     // frame 1 damaged
  const auto r = read_bytes(bytes);
  ASSERT_TRUE(r.opened);
  std::set<ProblemKind> kinds;
  const auto count = [](const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  for (const auto& p : r.problems) {
    kinds.insert(p.kind);
    const std::string line = describe(p);
    EXPECT_EQ(line.find('\n'), std::string::npos) << line;
    EXPECT_EQ(count(line, problem_kind_name(p.kind)), 1u) << line;
    if (p.kind != ProblemKind::NoTotals) {
      EXPECT_EQ(count(line, "offset " + std::to_string(p.offset)), 1u) << line;
    }
  }
  EXPECT_EQ(kinds, (std::set<ProblemKind>{ProblemKind::CorruptFrame, ProblemKind::MissingFrames,
                                          ProblemKind::Truncated, ProblemKind::NoTotals}));
}

// Counts what the reader asks of its source.
class CountingSource final : public ByteSource {
 public:
  CountingSource(std::span<const uint8_t> bytes, uint64_t* counter) : inner_(memory_source(bytes)), counter_(counter) {}
  uint64_t size() const override { return inner_->size(); }
  bool read(uint64_t offset, void* out, size_t n) const override {
    *counter_ += n;
    return inner_->read(offset, out, n);
  }

 private:
  std::unique_ptr<ByteSource> inner_;
  uint64_t* counter_;
};

// The sample with a stretch of 24-byte frames that each fail their payload
// check between its first and second frame.
std::vector<uint8_t> with_broken_frames(size_t n) {
  std::vector<uint8_t> bytes = sample().bytes;
  const auto broken = test::broken_frames(1, n);
  bytes.insert(bytes.begin() + static_cast<long>(sample().frame_offsets[1]), broken.begin(), broken.end());
  return bytes;
}

// Resynchronizing once per broken frame used to read a fresh window of up
// to 1 MiB per frame: quadratic in the damage.
TEST(ReaderDamage, BrokenFramesCostReadsInProportionToTheirSize) {
  const auto bytes = with_broken_frames(4000);
  uint64_t bytes_read = 0;
  TraceReader reader;
  std::string error;
  ASSERT_TRUE(reader.open(std::make_unique<CountingSource>(bytes, &bytes_read), "trace", &error)) << error;
  uint32_t frames = 0;
  reader.read([&](const ChunkView&) { ++frames; });
  EXPECT_EQ(frames, sample().frame_offsets.size());
  EXPECT_LE(bytes_read, 3 * bytes.size()) << "of a " << bytes.size() << "-byte file";
  ASSERT_EQ(reader.problems().size(), 1u);  // the stretch is one problem, not one per frame
  EXPECT_EQ(reader.problems()[0].offset, sample().frame_offsets[1]);
  EXPECT_NE(reader.problems()[0].message.find("(4000 damaged frames)"), std::string::npos)
      << reader.problems()[0].message;
}

// Commands that make several passes (analyze with NVTX ranges, report,
// export) share one reader: a later pass jumps over the damage unread and
// comes to exactly the same.
TEST(ReaderDamage, ALaterPassReadsNoDamagedByteAndComesToTheSame) {
  auto bytes = with_broken_frames(2000);
  bytes[sample().frame_offsets[3] + 2000 * sizeof(container::FrameHeader) + 40] ^= 0x04;  // and a flip in frame 3
  uint64_t bytes_read = 0;
  TraceReader reader;
  std::string error;
  ASSERT_TRUE(reader.open(std::make_unique<CountingSource>(bytes, &bytes_read), "trace", &error)) << error;
  std::vector<uint32_t> first, second;
  reader.read([&](const ChunkView& v) { first.push_back(v.sequence); });
  const std::vector<Problem> problems = reader.problems();
  const ReadStats stats = reader.stats();
  ASSERT_EQ(stats.frames_read, sample().frame_offsets.size() - 1);
  bytes_read = 0;
  reader.read([&](const ChunkView& v) { second.push_back(v.sequence); });
  EXPECT_EQ(second, first);
  ASSERT_EQ(reader.problems().size(), problems.size());
  for (size_t i = 0; i < problems.size(); ++i) {
    EXPECT_EQ(reader.problems()[i].kind, problems[i].kind);
    EXPECT_EQ(reader.problems()[i].offset, problems[i].offset);
    EXPECT_EQ(reader.problems()[i].message, problems[i].message);
  }
  EXPECT_EQ(reader.stats().frames_corrupt, stats.frames_corrupt);
  EXPECT_EQ(reader.stats().bytes_skipped, stats.bytes_skipped);
  EXPECT_EQ(reader.stats().end_offset, stats.end_offset);
  EXPECT_LE(bytes_read, bytes.size() - stats.bytes_skipped);  // the good frames, once
}

// Forged headers every 24 bytes, each claiming a 64 KiB payload over the
// next ones: checking every claim in full would cost 64 KiB per 24 bytes.
TEST(ReaderDamage, OverlappingForgedFramesCostWorkInProportionToTheirSize) {
  std::vector<uint8_t> bytes = sample().bytes;
  const size_t base = bytes.size();  // 8-aligned: frames are padded
  bytes.resize(base + (size_t{2} << 20));
  for (size_t at = base; at + sizeof(container::FrameHeader) <= bytes.size(); at += sizeof(container::FrameHeader)) {
    const size_t room = bytes.size() - at - sizeof(container::FrameHeader);
    const auto claim = static_cast<uint32_t>(std::min<size_t>(64 << 10, room));
    const auto h = container::make_frame_header(claim, 1000, 99, 0xBADC0DEu);
    std::memcpy(bytes.data() + at, &h, sizeof h);
  }
  uint64_t bytes_read = 0;
  TraceReader reader;
  std::string error;
  ASSERT_TRUE(reader.open(std::make_unique<CountingSource>(bytes, &bytes_read), "trace", &error)) << error;
  EXPECT_EQ(summarize(reader).stats.frames_read, sample().frame_offsets.size());
  EXPECT_LE(bytes_read, 4 * bytes.size()) << "of a " << bytes.size() << "-byte file";
}

// A 1 GiB hole after the last frame: a source that knows its holes is never
// asked for them.
class HoleSource final : public ByteSource {
 public:
  HoleSource(std::span<const uint8_t> data, uint64_t hole, uint64_t* counter)
      : data_(data), size_(data.size() + hole), counter_(counter) {}
  uint64_t size() const override { return size_; }
  bool read(uint64_t offset, void* out, size_t n) const override {
    if (offset > size_ || n > size_ - offset) return false;
    *counter_ += n;
    auto* p = static_cast<uint8_t*>(out);
    for (size_t i = 0; i < n; ++i) p[i] = offset + i < data_.size() ? data_[offset + i] : 0;
    return true;
  }
  uint64_t next_data(uint64_t offset) const override { return offset < data_.size() ? offset : size_; }

 private:
  std::span<const uint8_t> data_;
  uint64_t size_;
  uint64_t* counter_;
};

TEST(ReaderDamage, AHoleIsSkippedWithoutReadingIt) {
  uint64_t bytes_read = 0;
  TraceReader reader;
  std::string error;
  ASSERT_TRUE(reader.open(std::make_unique<HoleSource>(sample().bytes, uint64_t{1} << 30, &bytes_read), "trace",
                          &error)) << error;
  const TraceSummary s = summarize(reader);
  EXPECT_EQ(s.stats.frames_read, sample().frame_offsets.size());
  EXPECT_EQ(s.stats.bytes_skipped, uint64_t{1} << 30);
  EXPECT_LE(bytes_read, 2 * sample().bytes.size());
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

// A file as its writer leaves it, step by step: each wait of the reader
// shows the next (content, size). Content may change under a shrink, as
// when a writer that failed cuts its half-written frame off and writes on.
class GrowingBytes final : public ByteSource {
 public:
  struct Step {
    const std::vector<uint8_t>* content;
    size_t size;
  };
  explicit GrowingBytes(std::vector<Step> steps) : steps_(std::move(steps)) {}
  uint64_t size() const override { return steps_[at_].size; }
  bool read(uint64_t offset, void* out, size_t n) const override {
    const Step& s = steps_[at_];
    if (offset > s.size || n > s.size - offset) return false;
    std::memcpy(out, s.content->data() + offset, n);
    return true;
  }
  bool wait_for_growth(uint64_t known, uint64_t* size) const override {
    while (at_ + 1 < steps_.size()) {
      if (steps_[++at_].size != known) {
        *size = steps_[at_].size;
        return true;
      }
    }
    return false;
  }

 private:
  std::vector<Step> steps_;
  mutable size_t at_ = 0;
};

// The file header and then `stride` bytes more at each wait, up to `cut`.
std::unique_ptr<ByteSource> written_in_steps(const std::vector<uint8_t>& bytes, size_t stride, size_t cut) {
  std::vector<GrowingBytes::Step> steps;
  for (size_t n = sizeof(container::FileHeader); n < cut; n += stride) steps.push_back({&bytes, n});
  steps.push_back({&bytes, cut});
  return std::make_unique<GrowingBytes>(std::move(steps));
}

// Read while it is written, in steps that end inside headers, payloads and
// padding, a trace delivers what reading the finished file does: a frame
// the writer is inside is waited for, not reported as truncation.
TEST(ReaderDamage, AFileReadWhileWrittenReadsAsTheFinishedFile) {
  const SampleTrace& t = sample();
  for (size_t stride : {1, 5, 37, 600, 4096}) {
    for (bool ahead : {false, true}) {
      const auto r = read_source(written_in_steps(t.bytes, stride, t.bytes.size()), ahead);
      EXPECT_TRUE(same_read(r, read_bytes(t.bytes))) << "stride " << stride << (ahead ? ", read ahead" : "");
      EXPECT_TRUE(r.problems.empty()) << "stride " << stride;
    }
  }
}

// A writer that ended inside a frame (killed) leaves what the finished file
// says: the same truncation at the same offset.
TEST(ReaderDamage, AWriterThatEndsInsideAFrameLeavesTheFinishedFilesTruncation) {
  const SampleTrace& t = sample();
  for (size_t cut = sizeof(container::FileHeader); cut <= t.bytes.size(); cut += 211) {
    const auto part = std::span(t.bytes.data(), cut);
    EXPECT_TRUE(same_read(read_source(written_in_steps(t.bytes, 64, cut)), read_bytes(part))) << "cut " << cut;
  }
}

// A writer whose write failed half-way cuts the half frame off and writes
// its end there: the reader that waited inside the half frame reads the
// finished file's frames, not the bytes it first saw.
TEST(ReaderDamage, AHalfFrameCutOffAndWrittenOverReadsAsTheFinishedFile) {
  const SampleTrace& t = sample();
  const auto k = static_cast<long>(t.frame_offsets[3]);
  const std::vector<uint8_t> half(t.bytes.begin(), t.bytes.begin() + k + 20);
  std::vector<uint8_t> finished(t.bytes.begin(), t.bytes.begin() + k);
  finished.insert(finished.end(), t.bytes.begin() + static_cast<long>(t.frame_offsets.back()), t.bytes.end());
  const std::vector<GrowingBytes::Step> steps{
      {&half, static_cast<size_t>(k) - 8}, {&half, half.size()}, {&finished, static_cast<size_t>(k)},
      {&finished, finished.size()}};
  const auto r = read_source(std::make_unique<GrowingBytes>(steps));
  EXPECT_TRUE(same_read(r, read_bytes(finished)));
  EXPECT_EQ(r.sequences.back(), t.frame_offsets.size() - 1);
}

// A reason added by a newer writer (a minor version this reader only notes)
// is still a drop: the total counts it, under a reason of its own.
TEST(ReaderDamage, DropsOfAReasonFromANewerWriterStillCount) {
  flatbuffers::FlatBufferBuilder fbb;
  const auto drops = fbb.CreateVector(std::vector<flatbuffers::Offset<fb::DropCount>>{
      fb::CreateDropCount(fbb, fb::DropReason::StringSlotBusy, 3),
      fb::CreateDropCount(fbb, static_cast<fb::DropReason>(200), 5),
      fb::CreateDropCount(fbb, static_cast<fb::DropReason>(201), 2)});
  fb::ChunkBuilder chunk(fbb);
  chunk.add_drops(drops);
  fbb.Finish(chunk.Finish());
  ChunkView view;
  view.chunk = flatbuffers::GetRoot<fb::Chunk>(fbb.GetBufferPointer());
  SummaryBuilder builder(FileInfo{});
  builder.add_tables(view);
  const TraceSummary& s = builder.current();
  EXPECT_EQ(s.drops[static_cast<size_t>(fb::DropReason::StringSlotBusy)], 3u);
  EXPECT_EQ(s.drops[kUnknownDropReason], 7u);
  EXPECT_EQ(s.dropped_total(), 10u);
  EXPECT_STREQ(drop_reason_text(static_cast<fb::DropReason>(kUnknownDropReason)),
               "a reason this gpuscope does not know (written by a newer one)");
}

}  // namespace
}  // namespace gpuscope::reader
