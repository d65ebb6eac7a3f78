// The model's pure helpers: call classification and --window parsing.
#include <gtest/gtest.h>

#include <map>
#include <unordered_map>

#include "dense_id_map.h"
#include "metrics.h"
#include "node_cache.h"
#include "queued_streams.h"
#include "trace_model.h"

namespace gpuscope::analyzer {
namespace {

TEST(ClassifyFunction, RuntimeAndDriverNamesShareKinds) {
  EXPECT_EQ(classify_function("cudaMemcpyAsync"), CallKind::Copy);
  EXPECT_EQ(classify_function("cuMemcpyHtoD_v2"), CallKind::Copy);
  EXPECT_EQ(classify_function("cudaMemset2D"), CallKind::Memset);
  EXPECT_EQ(classify_function("cudaMallocHost"), CallKind::Alloc);
  EXPECT_EQ(classify_function("cuMemAllocAsync"), CallKind::Alloc);
  EXPECT_EQ(classify_function("cudaFreeAsync"), CallKind::Free);
  EXPECT_EQ(classify_function("cuMemFree_v2"), CallKind::Free);
  EXPECT_EQ(classify_function("cudaEventSynchronize"), CallKind::Sync);
  EXPECT_EQ(classify_function("cuCtxSynchronize_v2"), CallKind::Sync);
  EXPECT_EQ(classify_function("cudaStreamQuery"), CallKind::Sync);
  EXPECT_EQ(classify_function("__cudaLaunchKernel"), CallKind::Launch);
  EXPECT_EQ(classify_function("cuLaunchKernelEx"), CallKind::Launch);
  EXPECT_EQ(classify_function("cudaGraphLaunch"), CallKind::Launch);
  EXPECT_EQ(classify_function("cudaLaunchHostFunc"), CallKind::Other);  // a host function, no kernel
  EXPECT_EQ(classify_function("cuLaunchHostFunc_ptsz"), CallKind::Other);
  EXPECT_EQ(classify_function("cudaGetDeviceCount"), CallKind::Init);
  EXPECT_EQ(classify_function("cudaGetDevice"), CallKind::Other);
}

TEST(ParseWindow, AcceptsBoundedAndOpenWindows) {
  TimeWindow w;
  ASSERT_TRUE(parse_window("2.5:10", &w));
  EXPECT_DOUBLE_EQ(w.start_s, 2.5);
  EXPECT_DOUBLE_EQ(w.end_s, 10);
  ASSERT_TRUE(parse_window("3:", &w));
  EXPECT_DOUBLE_EQ(w.start_s, 3);
  EXPECT_LT(w.end_s, 0);
  ASSERT_TRUE(parse_window(":1", &w));
  EXPECT_DOUBLE_EQ(w.start_s, 0);
  EXPECT_DOUBLE_EQ(w.end_s, 1);
}

TEST(ParseWindow, RejectsNonsense) {
  TimeWindow w;
  for (const char* bad : {"", "5", "5:1", "1:1", "a:b", "1:2:3", "-1:2", "1x:2"})
    EXPECT_FALSE(parse_window(bad, &w)) << bad;
}

TEST(CudaErrors, NamesAndNoGpuCodes) {
  EXPECT_EQ(cuda_error_name(35, false), "cudaErrorInsufficientDriver");
  EXPECT_EQ(cuda_error_name(100, true), "CUDA_ERROR_NO_DEVICE");
  EXPECT_EQ(cuda_error_name(12345, false), "");
  EXPECT_TRUE(is_no_gpu_error(35));
  EXPECT_TRUE(is_no_gpu_error(100));
  EXPECT_TRUE(is_no_gpu_error(34));
  EXPECT_FALSE(is_no_gpu_error(2));
  EXPECT_FALSE(is_no_gpu_error(0));
}

}  // namespace
}  // namespace gpuscope::analyzer

namespace gpuscope::analyzer {
namespace {

TEST(IntervalSet, UnionOfUnorderedOverlappingIntervals) {
  IntervalSet s;
  s.add(50, 60);
  s.add(0, 10);
  s.add(5, 20);   // overlaps [0,10)
  s.add(20, 30);  // touches [5,20)
  s.add(55, 58);  // inside [50,60)
  s.add(7, 7);    // empty: ignored
  EXPECT_EQ(s.length(), 40u);
  EXPECT_EQ(s.length_within(25, 55), 10u);
  IntervalSet t;
  t.add(25, 52);
  t.add_all(s);
  EXPECT_EQ(t.length(), 60u);
}

TEST(IntervalSet, StaysCompactUnderManyAppends) {
  IntervalSet s;
  for (uint64_t i = 0; i < 1'000'000; ++i) s.add(i * 10, i * 10 + 12);  // each overlaps the next
  EXPECT_EQ(s.length(), 10'000'002u);
}

}  // namespace
}  // namespace gpuscope::analyzer

namespace gpuscope::analyzer {
namespace {

TEST(DenseIdMap, NearAndFarIdsAreKeptAndVisitedOnce) {
  DenseIdMap<uint64_t> m;
  EXPECT_EQ(m.find(3), nullptr);
  m[3] += 2;
  m[0] += 1;
  m[0xFFFFFFF0u] += 5;  // a damaged trace's id: no 4-billion-entry vector
  m[3] += 1;
  EXPECT_EQ(m.find(4), nullptr);
  ASSERT_NE(m.find(3), nullptr);
  EXPECT_EQ(*m.find(3), 3u);
  EXPECT_EQ(*m.find(0xFFFFFFF0u), 5u);
  std::map<uint32_t, uint64_t> seen;
  m.for_each([&](uint32_t id, uint64_t v) { EXPECT_TRUE(seen.emplace(id, v).second); });
  EXPECT_EQ(seen, (std::map<uint32_t, uint64_t>{{0, 1}, {3, 3}, {0xFFFFFFF0u, 5}}));
}

// Keys that share a slot take turns in it; every answer is the map's own element.
TEST(NodeCache, AnswersAreTheMapsElementsWhateverCollides) {
  std::unordered_map<uint64_t, int> map;
  NodeCache<std::unordered_map<uint64_t, int>, 4> cache(map);
  for (int round = 0; round < 3; ++round)
    for (uint64_t key = 0; key < 64; key += 3) {
      cache[key] += 1;
      EXPECT_EQ(&cache[key], &map.at(key));
    }
  EXPECT_EQ(map.size(), 22u);
  for (const auto& [key, n] : map) EXPECT_EQ(n, 3) << key;
}

// The flat list and the map it hands over to past kFlatStreams answer the same.
TEST(QueuedStreams, AnswersAlikeInTheFlatListAndPastIt) {
  for (const size_t streams : {size_t{3}, QueuedStreams::kFlatStreams + 40}) {
    QueuedStreams q;
    std::map<uint64_t, bool> expected;
    for (uint64_t s = 1; s <= streams; ++s) {
      q.set(s, s % 2 == 0);
      expected[s] = s % 2 == 0;
    }
    q.set(2, false);  // a stream set again keeps one entry
    expected[2] = false;
    EXPECT_FALSE(q.empty());
    const auto blocking_other_than = [&](uint64_t except) {
      for (const auto& [s, b] : expected)
        if (s != except && b) return true;
      return false;
    };
    EXPECT_EQ(q.blocking_other_than(0), blocking_other_than(0)) << streams;
    q.erase(3);
    expected.erase(3);
    q.erase_blocking();
    std::erase_if(expected, [](const auto& e) { return e.second; });
    EXPECT_FALSE(q.blocking_other_than(0)) << streams;
    q.set(1000, true);
    EXPECT_TRUE(q.blocking_other_than(0)) << streams;
    EXPECT_FALSE(q.blocking_other_than(1000)) << streams;
    q.erase(1000);
    EXPECT_EQ(q.empty(), expected.empty()) << streams;
    q.clear();
    EXPECT_TRUE(q.empty());
    q.set(7, true);  // usable again after a clear, flat
    EXPECT_TRUE(q.blocking_other_than(0));
  }
}

}  // namespace
}  // namespace gpuscope::analyzer
