// The NVTX range model on hand-built marker records: push/pop nesting per
// thread and domain, unmatched pops and ends, unterminated ranges closed at
// the end of the trace, start/end pairing across threads, and the locator
// that places a host call in its innermost range.
#include <gtest/gtest.h>

#include "range_model.h"

namespace gpuscope::analyzer {
namespace {

using K = fb::MarkerKind;

fb::Marker marker(K kind, uint64_t ns, uint32_t tid, uint32_t name = 0, uint32_t domain = 0, uint64_t id = 0) {
  return fb::Marker(ns, 0, id, name, domain, tid, kind, 0, 0);
}

const RangeInstance* find(const RangeModel& m, uint32_t name, uint64_t start) {
  for (const auto& r : m.ranges)
    if (r.name_id == name && r.start_ns == start) return &r;
  return nullptr;
}

TEST(RangeModel, PushPopNestsPerThreadAndDomain) {
  RangeBuilder b;
  // Thread 1: outer(10) [ inner(20) ] ; domain 7 interleaved, its own stack.
  b.add(marker(K::RangePush, 100, 1, 10));
  b.add(marker(K::RangePush, 150, 1, 30, 7));
  b.add(marker(K::RangePush, 200, 1, 20));
  b.add(marker(K::RangePop, 300, 1));
  b.add(marker(K::RangePop, 350, 1, 0, 7));
  b.add(marker(K::RangePop, 400, 1));
  // Thread 2's records arrive in between (another ring): its own stack.
  b.add(marker(K::RangePush, 250, 2, 40));
  b.add(marker(K::RangePop, 260, 2));
  const RangeModel m = b.finish(1000);
  ASSERT_EQ(m.ranges.size(), 4u);
  const RangeInstance* outer = find(m, 10, 100);
  const RangeInstance* inner = find(m, 20, 200);
  const RangeInstance* domain = find(m, 30, 150);
  ASSERT_TRUE(outer && inner && domain);
  EXPECT_EQ(outer->end_ns, 400u);
  EXPECT_EQ(outer->depth, 0);
  EXPECT_EQ(inner->end_ns, 300u);
  EXPECT_EQ(inner->depth, 1);
  EXPECT_EQ(domain->end_ns, 350u);
  EXPECT_EQ(domain->depth, 0);
  EXPECT_EQ(domain->domain_id, 7u);
  EXPECT_EQ(find(m, 40, 250)->end_ns, 260u);
  EXPECT_EQ(m.unmatched_pops + m.unterminated + m.unmatched_ends, 0u);
  EXPECT_TRUE(std::is_sorted(m.ranges.begin(), m.ranges.end(),
                             [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; }));
}

TEST(RangeModel, UnmatchedPopIsCountedAndUnterminatedRangesCloseAtTraceEnd) {
  RangeBuilder b;
  b.add(marker(K::RangePop, 50, 1));         // nothing open: unmatched
  b.add(marker(K::RangePush, 100, 1, 10));
  b.add(marker(K::RangePush, 200, 1, 20));
  b.add(marker(K::RangePop, 300, 1));        // closes 20
  b.add(marker(K::RangePop, 310, 1, 0, 9));  // domain 9 has nothing open
  const RangeModel m = b.finish(5000);       // 10 never popped
  EXPECT_EQ(m.unmatched_pops, 2u);
  EXPECT_EQ(m.unterminated, 1u);
  const RangeInstance* open = find(m, 10, 100);
  ASSERT_NE(open, nullptr);
  EXPECT_TRUE(open->unterminated);
  EXPECT_EQ(open->end_ns, 5000u);
  EXPECT_FALSE(find(m, 20, 200)->unterminated);
}

TEST(RangeModel, StartEndPairsByIdAcrossThreadsInAnyArrivalOrder) {
  RangeBuilder b;
  b.add(marker(K::RangeEnd, 900, 2, 0, 0, 5));      // ended on thread 2, drained before its start
  b.add(marker(K::RangeStart, 100, 1, 10, 0, 5));
  b.add(marker(K::RangeStart, 200, 1, 11, 0, 6));   // never ended
  b.add(marker(K::RangeEnd, 300, 3, 0, 0, 77));     // never started
  b.add(marker(K::RangeEnd, 950, 2, 0, 0, 5));      // ended twice
  b.add(marker(K::Instant, 120, 1, 12));
  const RangeModel m = b.finish(2000);
  ASSERT_EQ(m.ranges.size(), 2u);
  const RangeInstance* crossed = find(m, 10, 100);
  ASSERT_NE(crossed, nullptr);
  EXPECT_TRUE(crossed->start_end);
  EXPECT_EQ(crossed->end_ns, 900u);
  EXPECT_EQ(crossed->tid, 1u);
  EXPECT_TRUE(find(m, 11, 200)->unterminated);
  EXPECT_EQ(find(m, 11, 200)->end_ns, 2000u);
  EXPECT_EQ(m.unmatched_ends, 2u);
  EXPECT_EQ(m.unterminated, 1u);
  EXPECT_EQ(m.marks, 1u);
}

TEST(RangeModel, LocatorFindsTheInnermostRangeOfTheThreadElseAProcessWideOne) {
  RangeBuilder b;
  b.add(marker(K::RangePush, 100, 1, 10));
  b.add(marker(K::RangePush, 200, 1, 20));
  b.add(marker(K::RangePop, 300, 1));
  b.add(marker(K::RangePop, 400, 1));
  b.add(marker(K::RangeStart, 350, 1, 30, 0, 1));
  b.add(marker(K::RangeEnd, 600, 2, 0, 0, 1));
  const RangeModel m = b.finish(1000);
  const RangeLocator where(m);
  const auto name_at = [&](uint32_t tid, uint64_t ns) {
    const int64_t i = where.locate(tid, ns);
    return i < 0 ? 0u : m.ranges[static_cast<size_t>(i)].name_id;
  };
  EXPECT_EQ(name_at(1, 50), 0u);
  EXPECT_EQ(name_at(1, 150), 10u);
  EXPECT_EQ(name_at(1, 250), 20u);   // innermost
  EXPECT_EQ(name_at(1, 300), 10u);   // inner closed at 300
  EXPECT_EQ(name_at(1, 380), 10u);   // thread range wins over the process-wide one
  EXPECT_EQ(name_at(1, 450), 30u);   // only the start/end range is open
  EXPECT_EQ(name_at(2, 250), 0u);    // thread 2 is in no push/pop range, start/end not yet open
  EXPECT_EQ(name_at(2, 500), 30u);
  EXPECT_EQ(name_at(2, 600), 0u);
}

TEST(RangeModel, EventsPastTheLimitAreCountedNotPaired) {
  RangeBuilder b(100);
  for (size_t i = 0; i < 103; ++i) b.add(marker(K::RangePush, i, 1, 1));
  b.add(marker(K::Instant, 200, 1, 2));  // marks are counted, never limited
  const RangeModel m = b.finish(1000);
  EXPECT_EQ(m.events_over_limit, 3u);
  EXPECT_EQ(m.unterminated, 100u);
  EXPECT_EQ(m.marks, 1u);
}

}  // namespace
}  // namespace gpuscope::analyzer
