// The export's parts on their own: the typed-record index the walk joins
// calls through, the nesting ring of a track and the output buffer.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "output.h"
#include "track_nesting.h"
#include "typed_index.h"

namespace gpuscope::test {
namespace {

using namespace gpuscope::exporter;

fb::Sync sync_record(uint64_t correlation, uint64_t start) {
  return fb::Sync(start, 10, correlation, 0x7000, fb::SyncKind::Stream, fb::Source::Host, 0, 0);
}

uint64_t start_of(const std::optional<TypedRecord>& r) {
  return r ? std::visit([](const auto& x) { return x.start_ns(); }, *r) : 0;
}

TEST(TypedIndex, EachRecordIsTakenOnceAndTheFirstOfAnIdWins) {
  const std::vector<fb::Sync> records = {sync_record(7, 100), sync_record(8, 200), sync_record(7, 300)};
  TypedIndex index;
  for (const auto& r : records) index.add(r.correlation_id(), r);
  EXPECT_EQ(start_of(index.take(7)), 100u);
  EXPECT_FALSE(index.take(7));  // taken, and the duplicate was dropped
  EXPECT_FALSE(index.take(9));
  std::vector<uint64_t> left;
  index.for_each_left([&](const TypedRecord& r) { left.push_back(std::get<fb::Sync>(r).start_ns()); });
  EXPECT_EQ(left, std::vector<uint64_t>{200});
}

TEST(TypedIndex, WhatNoCallTookOutlivesTheChunkInFileOrder) {
  std::vector<fb::Copy> chunk;
  for (uint64_t i = 0; i < 3000; ++i)
    chunk.push_back(fb::Copy(1000 + i, 5, 50 + i, 4096, 0x7000, fb::CopyDirection::HostToDevice,
                             fb::MemoryKind::Pageable, fb::MemoryKind::Device, fb::Source::Host, 0, 0));
  TypedIndex current, carried;
  for (const auto& r : chunk) current.add(r.correlation_id(), r);
  for (uint64_t i = 0; i < 3000; ++i)
    if (i % 3 != 0) ASSERT_TRUE(current.take(50 + i)) << i;
  carried.adopt_left(current);
  current.clear();
  chunk.assign(chunk.size(), fb::Copy());  // the view is gone
  EXPECT_EQ(start_of(carried.take(50 + 3)), 1003u);
  EXPECT_FALSE(carried.take(50 + 4));  // taken in its own chunk
  std::vector<uint64_t> left;
  carried.for_each_left([&](const TypedRecord& r) { left.push_back(std::get<fb::Copy>(r).start_ns()); });
  ASSERT_EQ(left.size(), 999u);
  EXPECT_EQ(left[0], 1000u);
  EXPECT_EQ(left[1], 1006u);
  EXPECT_EQ(left.back(), 1000u + 2997);
}

// Ids that share their low bits would pile up in one run of the table; a
// hostile trace must still find every record (the table rehashes them).
TEST(TypedIndex, IdsThatClusterAreStillFound) {
  std::vector<fb::Sync> records;
  for (uint64_t i = 1; i <= 5000; ++i) records.push_back(sync_record(i << 24, i));
  TypedIndex index;
  for (const auto& r : records) index.add(r.correlation_id(), r);
  for (uint64_t i = 5000; i >= 1; --i) ASSERT_EQ(start_of(index.take(i << 24)), i) << i;
  EXPECT_FALSE(index.take(uint64_t{1} << 23));
  index.clear();
  EXPECT_FALSE(index.take(uint64_t{1} << 24));
}

TEST(NestGuard, NestsChildrenAndForgetsTheOldestPastItsWindow) {
  NestGuard g;
  uint64_t start = 10;
  EXPECT_EQ(g.place(&start, 20), NestGuard::Placed::Ok);  // a child first
  start = 5;
  EXPECT_EQ(g.place(&start, 30), NestGuard::Placed::Ok);  // its parent
  start = 25;
  EXPECT_EQ(g.place(&start, 40), NestGuard::Placed::Clamped);  // overlaps the parent's end
  EXPECT_EQ(start, 30u);
  start = 1;
  EXPECT_EQ(g.place(&start, 35), NestGuard::Placed::Rejected);  // ended before one already out
  // 200 disjoint spans: the ring keeps the last 64, and a span reaching
  // back past what it forgot starts where that ended.
  for (uint64_t i = 0; i < 200; ++i) {
    start = 100 + 10 * i;
    ASSERT_EQ(g.place(&start, 105 + 10 * i), NestGuard::Placed::Ok) << i;
  }
  start = 100;  // would contain all 200, but the first 136 are forgotten
  EXPECT_EQ(g.place(&start, 5000), NestGuard::Placed::Clamped);
  EXPECT_EQ(start, 100u + 10 * 135 + 5);
}

TEST(Output, PiecesSmallAndLargerThanTheBufferComeOutInOrder) {
  char* data = nullptr;
  size_t size = 0;
  std::FILE* f = open_memstream(&data, &size);
  std::string expected;
  {
    Output out(f);
    for (int i = 0; i < 100000; ++i) {
      out.put("ab");
      out.put_uint(static_cast<uint64_t>(i));
      out.put(',');
      expected += "ab" + std::to_string(i) + ",";
      if (i % 1000 == 0) out.maybe_flush();
    }
    const std::string large(3 << 20, 'x');  // larger than the buffer
    char* at = out.claim(large.size());
    std::copy(large.begin(), large.end(), at);
    out.put_int(-42);
    expected += large + "-42";
  }
  std::fclose(f);
  const std::string written(data, size);
  std::free(data);
  EXPECT_TRUE(written == expected) << written.size() << " bytes against " << expected.size();
}

}  // namespace
}  // namespace gpuscope::test
