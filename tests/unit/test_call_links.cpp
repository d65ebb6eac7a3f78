// Format 2.0's call links (schemas/record_coding.h): a host typed record
// that repeats its call's start and duration is stored as an index into the
// chunk's calls, and comes back from the reader with the call's times.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "chunk_builder.h"
#include "container.h"
#include "record_checks.h"
#include "record_coding.h"

namespace gpuscope {
namespace {

struct Written {
  std::vector<fb::ApiCall> calls;
  std::vector<fb::Copy> copies;
  std::vector<fb::Sync> syncs;
  std::vector<fb::Kernel> kernels;
  size_t linkable = 0;  // host records with their call's exact times
};

// What the drain hands the builder: each thread's call followed by its typed
// record, threads interleaved in batches, some records not linkable (a
// device kernel, a sync whose duration differs from its call's).
Written add_interleaved_threads(capture::ChunkBuilder& b, int steps) {
  Written w;
  std::mt19937_64 rng(7);
  uint64_t clock = 5'000'000'000, correlation = 0;
  for (int i = 0; i < steps; ++i) {
    const uint32_t tid = 100 + static_cast<uint32_t>((i / 8) % 3);  // batches of 8 per thread
    const uint64_t start = clock += 1'000 + rng() % 5'000;
    const uint64_t duration = 500 + rng() % 9'000;
    const uint64_t corr = ++correlation;
    w.calls.emplace_back(start, duration, corr, 0x10, tid, 0, 0, 1 + i % 5, 0, 0, 0, 0);
    b.add(w.calls.back());
    switch (i % 4) {
      case 0:
        w.copies.emplace_back(start, duration, corr, 4096, 0x10, fb::CopyDirection::HostToDevice,
                              fb::MemoryKind::Pageable, fb::MemoryKind::Device, fb::Source::Host, 0, 0);
        b.add(w.copies.back());
        ++w.linkable;
        break;
      case 1:
        w.syncs.emplace_back(start, duration - (i % 8 == 1 ? 1 : 0), corr, 0x10, fb::SyncKind::Stream,
                             fb::Source::Host, 0, 0);
        b.add(w.syncs.back());
        w.linkable += i % 8 == 1 ? 0 : 1;
        break;
      case 2:
        w.kernels.emplace_back(start, duration, corr, 0x10, 3, 64, 1, 1, 128, 1, 1, 0, 0,
                               i % 8 == 2 ? fb::Source::Device : fb::Source::Host, 0, 0, 0);
        b.add(w.kernels.back());
        w.linkable += i % 8 == 2 ? 0 : 1;
        break;
      default: break;
    }
  }
  return w;
}

template <class T> void expect_same(const std::vector<T>& a, const std::vector<T>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(std::memcmp(&a[i], &b[i], sizeof(T)), 0) << what << " #" << i;
}

TEST(CallLinks, HostRecordsComeBackWithTheirCallsTimesAcrossInterleavedThreads) {
  capture::ChunkBuilder builder;
  const Written w = add_interleaved_threads(builder, 4000);
  const auto bytes = builder.build();
  reader::DecodedRecords out;
  EXPECT_EQ(reader::decode_records(*fb::GetChunk(bytes.data()), container::kWriterFlags, &out), 0u);
  expect_same(out.api_calls, w.calls, "calls");
  expect_same(out.copies, w.copies, "copies");
  expect_same(out.syncs, w.syncs, "syncs");
  expect_same(out.kernels, w.kernels, "kernels");
}

TEST(CallLinks, EveryLinkableRecordIsStoredLinked) {
  // Read as a 1.x file would be (no link flag), a linked record's duration
  // is all ones: dropped as invalid. So the dropped count is the number of
  // records the builder linked, and it must be every linkable one.
  capture::ChunkBuilder builder;
  const Written w = add_interleaved_threads(builder, 4000);
  const auto bytes = builder.build();
  reader::DecodedRecords out;
  const uint32_t without_links = container::kWriterFlags & ~container::kFlagCallLinked;
  EXPECT_EQ(reader::decode_records(*fb::GetChunk(bytes.data()), without_links, &out), w.linkable);
  EXPECT_EQ(out.copies.size() + out.syncs.size() + out.kernels.size(),
            w.copies.size() + w.syncs.size() + w.kernels.size() - w.linkable);
}

TEST(CallLinks, ALinkPastTheChunksCallsIsDroppedAndCounted) {
  capture::ChunkBuilder builder;
  builder.add(fb::ApiCall(1'000, 50, 1, 0, 7, 0, 0, 1, 0, 0, 0, 0));
  // As a damaged chunk would hold it: linked (all-ones duration) to call #9 of 1.
  builder.add(fb::Sync(9, container::kLinkedDuration, 1, 0, fb::SyncKind::Device, fb::Source::Host, 0, 0));
  builder.add(fb::Sync(1'000, 50, 1, 0, fb::SyncKind::Device, fb::Source::Host, 0, 0));
  const auto bytes = builder.build();
  reader::DecodedRecords out;
  EXPECT_EQ(reader::decode_records(*fb::GetChunk(bytes.data()), container::kWriterFlags, &out), 1u);
  ASSERT_EQ(out.syncs.size(), 1u);
  EXPECT_EQ(out.syncs[0].start_ns(), 1'000u);
  EXPECT_EQ(out.syncs[0].duration_ns(), 50u);
}

TEST(CallLinks, LinkedRecordsTakeLessRoomOnDisk) {
  // The same records with every typed record's duration one off its call's
  // (nothing linkable) against the linked chunk, both compressed.
  capture::FrameEncoder encoder(-5);
  capture::ChunkBuilder linked, unlinked;
  const Written w = add_interleaved_threads(linked, 20000);
  for (const auto& c : w.calls) unlinked.add(c);
  for (auto c : w.copies) unlinked.add(fb::Copy(c.start_ns(), c.duration_ns() + 1, c.correlation_id(), c.bytes(),
                                                c.stream(), c.direction(), c.src_kind(), c.dst_kind(), c.source(), 0, 0));
  for (auto s : w.syncs)
    unlinked.add(fb::Sync(s.start_ns(), s.duration_ns() + 1, s.correlation_id(), s.object(), s.kind(), s.source(), 0, 0));
  for (auto k : w.kernels) unlinked.add(k);
  const size_t linked_bytes = encoder.encode(linked.build(), 0).size();
  const size_t unlinked_bytes = encoder.encode(unlinked.build(), 0).size();
  EXPECT_LT(linked_bytes, unlinked_bytes * 9 / 10) << linked_bytes << " against " << unlinked_bytes;
}

}  // namespace
}  // namespace gpuscope
