// The perf sample-buffer reader (capture/perf_ring.h) on synthetic kernel
// records: samples with call chains, lost-sample notes, records that wrap
// around the end of the buffer, and bytes that make no sense.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "perf_ring.h"

namespace gpuscope::capture {
namespace {

constexpr uint64_t kUserContext = static_cast<uint64_t>(-512);  // PERF_CONTEXT_USER

struct Ring {
  explicit Ring(size_t size) : bytes(size) {}
  std::vector<std::byte> bytes;
  uint64_t head = 0;

  // Writes 64-bit words at the head, wrapping around the end as the kernel does.
  void put(const std::vector<uint64_t>& words) {
    for (uint64_t w : words)
      for (int i = 0; i < 8; ++i) bytes[(head++) & (bytes.size() - 1)] = static_cast<std::byte>(w >> (8 * i));
  }
  static uint64_t header(uint32_t type, uint16_t size) { return type | uint64_t{size} << 48; }
  void sample(uint64_t time, uint32_t pid, uint32_t tid, uint64_t ip, std::vector<uint64_t> chain) {
    const auto size = static_cast<uint16_t>(8 * (5 + chain.size()));
    std::vector<uint64_t> w{header(kPerfRecordSample, size), ip, pid | uint64_t{tid} << 32, time, chain.size()};
    w.insert(w.end(), chain.begin(), chain.end());
    put(w);
  }
  void lost(uint64_t n) { put({header(kPerfRecordLost, 24), 7, n}); }
};

struct Seen {
  uint64_t time;
  uint32_t pid, tid;
  std::vector<uint64_t> frames;
};

std::vector<Seen> read_all(PerfRecordReader& reader, const Ring& ring, uint64_t* tail, PerfReadCounts* counts) {
  std::vector<Seen> seen;
  *tail = reader.read(ring.bytes, *tail, ring.head, [&](const PerfSample& s) {
    seen.push_back({s.time_ns, s.pid, s.tid, {s.frames.begin(), s.frames.end()}});
  }, counts);
  return seen;
}

// A fresh reader over the whole ring.
struct WholeRead {
  std::vector<Seen> seen;
  PerfReadCounts counts;
  uint64_t tail = 0;
};
WholeRead read_ring(const Ring& ring, uint32_t max_frames = 32) {
  PerfRecordReader reader(max_frames);
  WholeRead r;
  r.seen = read_all(reader, ring, &r.tail, &r.counts);
  return r;
}

TEST(PerfRing, SamplesKeepTheirUserFramesInnermostFirstWithTheLeafAsAReturnAddress) {
  Ring ring(4096);
  ring.sample(1000, 10, 11, 0x401000, {kUserContext, 0x401000, 0x402222, 0x403333});
  ring.lost(5);
  ring.sample(2000, 10, 12, 0x500000, {kUserContext, 0x500000});
  const WholeRead r = read_ring(ring);
  ASSERT_EQ(r.seen.size(), 2u);
  EXPECT_EQ(r.tail, ring.head);
  EXPECT_EQ(r.seen[0].time, 1000u);
  EXPECT_EQ(r.seen[0].pid, 10u);
  EXPECT_EQ(r.seen[0].tid, 11u);
  EXPECT_EQ(r.seen[0].frames, (std::vector<uint64_t>{0x401001, 0x402222, 0x403333}));
  EXPECT_EQ(r.seen[1].frames, (std::vector<uint64_t>{0x500001}));
  EXPECT_EQ(r.counts.samples, 2u);
  EXPECT_EQ(r.counts.lost, 5u);
  EXPECT_EQ(r.counts.unreadable, 0u);
}

TEST(PerfRing, ChainsDeeperThanTheLimitAreCut) {
  Ring ring(4096);
  ring.sample(1, 1, 1, 0x10, {kUserContext, 0x10, 0x20, 0x30, 0x40, 0x50});
  const WholeRead r = read_ring(ring, 3);
  ASSERT_EQ(r.seen.size(), 1u);
  EXPECT_EQ(r.seen[0].frames, (std::vector<uint64_t>{0x11, 0x20, 0x30}));
}

TEST(PerfRing, ARecordWrappingAroundTheEndIsReadWhole) {
  Ring ring(256);
  PerfRecordReader reader(32);
  PerfReadCounts counts;
  uint64_t tail = 0;
  // Fill and consume most of the buffer, so the next record straddles its end.
  for (int i = 0; i < 4; ++i) ring.sample(i, 1, 1, 0x100 + i, {kUserContext, 0x100u + i});
  read_all(reader, ring, &tail, &counts);
  ASSERT_EQ(tail, ring.head);
  ASSERT_GT(ring.head % 256 + 72, 256u) << "the next sample must wrap";
  ring.sample(77, 2, 3, 0xabc, {kUserContext, 0xabc, 0xdef});
  const auto seen = read_all(reader, ring, &tail, &counts);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].time, 77u);
  EXPECT_EQ(seen[0].tid, 3u);
  EXPECT_EQ(seen[0].frames, (std::vector<uint64_t>{0xabd, 0xdef}));
  EXPECT_EQ(counts.unreadable, 0u);
}

TEST(PerfRing, ARecordSizeBeyondTheHeadSkipsToTheHead) {
  Ring ring(4096);
  ring.put({Ring::header(kPerfRecordSample, 4000), 1, 2});  // claims 4000 bytes, 24 written
  const WholeRead r = read_ring(ring);
  EXPECT_TRUE(r.seen.empty());
  EXPECT_EQ(r.tail, ring.head);
  EXPECT_EQ(r.counts.unreadable, 1u);
}

TEST(PerfRing, ZeroAndUnalignedSizesAreNotFollowed) {
  for (uint16_t size : {uint16_t{0}, uint16_t{4}, uint16_t{12}}) {
    Ring ring(4096);
    ring.put({Ring::header(kPerfRecordSample, size), 0, 0, 0});
    const WholeRead r = read_ring(ring);
    EXPECT_TRUE(r.seen.empty()) << size;
    EXPECT_EQ(r.tail, ring.head) << size;
    EXPECT_EQ(r.counts.unreadable, 1u) << size;
  }
}

TEST(PerfRing, AChainLongerThanItsRecordIsSkippedAndReadingGoesOn) {
  Ring ring(4096);
  // nr says 1000 frames in a 48-byte record.
  ring.put({Ring::header(kPerfRecordSample, 48), 0x10, 1, 5, 1000, kUserContext});
  ring.sample(9, 1, 1, 0x20, {kUserContext, 0x20});
  const WholeRead r = read_ring(ring);
  ASSERT_EQ(r.seen.size(), 1u);
  EXPECT_EQ(r.seen[0].time, 9u);
  EXPECT_EQ(r.counts.unreadable, 1u);
  EXPECT_EQ(r.counts.samples, 1u);
}

TEST(PerfRing, TruncatedSamplesAndLostNotesAreCountedNotRead) {
  Ring ring(4096);
  ring.put({Ring::header(kPerfRecordSample, 16), 0x10});  // no pid, time or chain
  ring.put({Ring::header(kPerfRecordLost, 16), 7});       // no count
  ring.put({Ring::header(14 /* throttle */, 24), 1, 2});  // another kind: skipped quietly
  const WholeRead r = read_ring(ring);
  EXPECT_TRUE(r.seen.empty());
  EXPECT_EQ(r.tail, ring.head);
  EXPECT_EQ(r.counts.unreadable, 2u);
  EXPECT_EQ(r.counts.lost, 0u);
}

TEST(PerfRing, PositionsNoKernelWouldWriteAreNotFollowed) {
  Ring ring(4096);
  ring.sample(1, 1, 1, 0x10, {kUserContext, 0x10});
  PerfRecordReader reader(32);
  PerfReadCounts counts;
  // A head more than a buffer ahead of the tail, and a head behind it.
  uint64_t tail = 0;
  EXPECT_EQ(reader.read(ring.bytes, tail, 4096 + 8, [](const PerfSample&) { FAIL(); }, &counts), 4096u + 8);
  tail = 100;
  EXPECT_EQ(reader.read(ring.bytes, tail, 50, [](const PerfSample&) { FAIL(); }, &counts), 50u);
  // A buffer whose size is not a power of two.
  std::vector<std::byte> odd(1000);
  EXPECT_EQ(reader.read(odd, 0, 16, [](const PerfSample&) { FAIL(); }, &counts), 16u);
  EXPECT_EQ(counts.unreadable, 3u);
}

}  // namespace
}  // namespace gpuscope::capture
