// The model's pure helpers: call classification, --window parsing, and
// what the GPU did after waits on queued kernels.
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

// A loop of steps: the device runs `gpu_ns` of kernels from each step's
// start + host_ns, and the host waits for them from its launches' end
// (start + host_ns + 10 us) to the kernels' end + 5 us.
TraceModel drain_loop(uint64_t host_ns, uint64_t gpu_ns, int steps) {
  TraceModel m;
  m.device_records = static_cast<uint64_t>(steps);
  m.begin_ns = 1'000'000;
  QueuedWaits& w = m.waits_on_queued[7];
  uint64_t now = m.begin_ns;
  for (int i = 0; i < steps; ++i) {
    const uint64_t kernels = now + host_ns;
    m.device.kernels.add(kernels, kernels + gpu_ns);
    const uint64_t wait_from = kernels + 10'000, returned = kernels + gpu_ns + 5'000;
    w.keep_kernel_wait({returned, returned - wait_from});
    ++w.waits;
    now = returned;
  }
  m.end_ns = now + 1'000'000;
  return m;
}

Metrics drain_of(const TraceModel& m) {
  Metrics x;
  x.feeder_tid = 7;
  x.wait_on_kernels_share = 1.0;
  drain_metrics(m, device_busy(m), x);
  return x;
}

TEST(DrainMetrics, AWaitCostsTheGpusIdleAfterItUpToItsOwnLength) {
  // 2.5 ms of host work, 3 ms of kernels: each wait (2.995 ms) left the GPU
  // idle for the next step's 2.5 ms; the last wait has nothing after it.
  const TraceModel short_host = drain_loop(2'500'000, 3'000'000, 100);
  Metrics x = drain_of(short_host);
  EXPECT_EQ(x.drained_waits, 99u);
  EXPECT_NEAR(x.drain_share * static_cast<double>(short_host.wall_ns()), 99 * 2'500'000.0, 1.0);
  // 40 ms of host work, 9 ms of kernels: overlapping saves the wait's 8.995 ms, not the 40.
  const TraceModel long_host = drain_loop(40'000'000, 9'000'000, 100);
  x = drain_of(long_host);
  EXPECT_NEAR(x.drain_share * static_cast<double>(long_host.wall_ns()), 99 * 8'995'000.0, 1.0);
}

TEST(DrainMetrics, AGpuStillBusyAfterTheWaitWasNotDrained) {
  TraceModel m = drain_loop(2'500'000, 3'000'000, 50);
  const auto spans = m.device.kernels.spans();
  for (const auto& [start, end] : spans) m.device.other_copies.add(end, end + 1'000'000);  // another stream's copy
  Metrics x = drain_of(m);
  EXPECT_EQ(x.drained_waits, 0u);
  EXPECT_EQ(x.drain_share, 0.0);
  // Device work ending just after the return (clock conversion) still drained it.
  m = drain_loop(2'500'000, 3'000'000, 50);
  for (const auto& [start, end] : spans) m.device.other_copies.add(end, end + 5'000 + kDrainSkewNs / 2);
  EXPECT_EQ(drain_of(m).drained_waits, 49u);
}

TEST(DrainMetrics, AWaitBeforeAnyRecordedDeviceWorkIsNotJudged) {
  TraceModel m = drain_loop(2'500'000, 3'000'000, 10);
  auto& waits = m.waits_on_queued[7].kernel_waits;
  waits.insert(waits.begin(), KernelWait{m.begin_ns + 1'000, 500});  // what it waited for left no record
  EXPECT_EQ(drain_of(m).drained_waits, 9u);
}

TEST(DrainMetrics, WithoutDeviceTimestampsOrOutsideTheDeviceWindowsNothingIsClaimed) {
  TraceModel m = drain_loop(2'500'000, 3'000'000, 50);
  m.device_records = 0;
  EXPECT_EQ(drain_of(m).drained_waits, 0u);
  EXPECT_FALSE(drain_of(m).drain_judged);  // unknown, not zero: the JSON says null
  m = drain_loop(2'500'000, 3'000'000, 50);
  m.device_windows = {{m.begin_ns, m.begin_ns + 20'000'000}};  // the first few steps only
  const Metrics x = drain_of(m);
  EXPECT_TRUE(x.drain_judged);
  EXPECT_GT(x.drained_waits, 0u);
  EXPECT_LT(x.drained_waits, 5u);
}

TEST(DrainMetrics, ManyWaitsAreKeptAsAnEvenSampleAndScaledBack) {
  const int steps = static_cast<int>(kMaxKernelWaitsKept) * 3;
  const TraceModel m = drain_loop(20'000, 30'000, steps);  // each wait costs the 20 us of host work
  const QueuedWaits& w = m.waits_on_queued.at(7);
  EXPECT_LE(w.kernel_waits.size(), kMaxKernelWaitsKept);
  EXPECT_EQ(w.kernel_wait_stride, 4u);
  for (size_t i = 1; i < w.kernel_waits.size(); ++i)  // every 4th step: 4 x 55 us apart
    ASSERT_EQ(w.kernel_waits[i].end_ns - w.kernel_waits[i - 1].end_ns, 4 * 55'000u) << i;
  const Metrics x = drain_of(m);
  EXPECT_NEAR(static_cast<double>(x.drained_waits), steps, 4.0);
  EXPECT_NEAR(x.drain_share * static_cast<double>(m.wall_ns()), (steps - 1) * 20'000.0, 4 * 20'000.0);
}

}  // namespace
}  // namespace gpuscope::analyzer
