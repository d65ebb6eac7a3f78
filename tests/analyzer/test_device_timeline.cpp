// With device records (Source::Device, as the CUPTI collector writes them)
// the analysis takes GPU busy, its split and copy bandwidth from the
// device's own timestamps rather than from NVML or host call times.
#include <gtest/gtest.h>

#include "../support/sample_trace.h"
#include "chunk_builder.h"
#include "metrics.h"
#include "rules.h"
#include "trace_model.h"

namespace gpuscope::analyzer {
namespace {

constexpr uint64_t kStart = 1'000'000'000;  // process start (monotonic ns)
constexpr uint64_t kMs = 1'000'000;

// One frame: metadata, the records `fill` adds, and the end at 100 ms.
std::vector<uint8_t> trace_bytes(const std::function<void(capture::ChunkBuilder&)>& fill) {
  capture::ProcessMetadata meta;
  meta.pid = 1;
  meta.exe = "/app";
  meta.start_monotonic_ns = kStart;
  return test::one_frame_trace(meta, kStart + 100 * kMs, [&](capture::ChunkBuilder& b) {
    b.add_strings({{1, "cudaMemcpyAsync"}, {2, "cudaLaunchKernel"}, {3, "k"}});
    fill(b);
  });
}

Metrics metrics_of(const std::vector<uint8_t>& bytes) {
  reader::TraceReader r;
  std::string error;
  EXPECT_TRUE(r.open(reader::memory_source(bytes), "t", &error)) << error;
  return compute_metrics(build_model(r));
}

fb::Kernel device_kernel(uint64_t start_ms, uint64_t ms) {
  return fb::Kernel(kStart + start_ms * kMs, ms * kMs, 0, 1, 3, 1, 1, 1, 1, 1, 1, 0, 0, fb::Source::Device, 0, 0, 0);
}

fb::Copy device_copy(uint64_t start_ms, uint64_t ms, fb::CopyDirection dir, uint64_t bytes) {
  return fb::Copy(kStart + start_ms * kMs, ms * kMs, 0, bytes, 1, dir, fb::MemoryKind::Pinned, fb::MemoryKind::Device,
                  fb::Source::Device, 0, 1);
}

TEST(DeviceTimeline, BusyAndSplitComeFromDeviceTimestamps) {
  const Metrics x = metrics_of(trace_bytes([](capture::ChunkBuilder& b) {
    b.add(device_kernel(40, 20));  // unordered, and two overlapping streams
    b.add(device_kernel(10, 20));
    b.add(device_kernel(20, 10));
    b.add(device_copy(0, 10, fb::CopyDirection::HostToDevice, 250'000'000));  // 25 GB/s
    b.add(device_copy(90, 5, fb::CopyDirection::DeviceToHost, 125'000'000));
  }));
  EXPECT_EQ(x.gpu_busy_source, "device");
  EXPECT_TRUE(x.device_timestamps);
  EXPECT_NEAR(*x.device_kernel_share, 0.40, 1e-9);  // [10,30) and [40,60)
  EXPECT_NEAR(*x.device_h2d_share, 0.10, 1e-9);
  EXPECT_NEAR(*x.device_d2h_share, 0.05, 1e-9);
  EXPECT_NEAR(*x.gpu_util, 0.55, 1e-9);  // [0,30) [40,60) [90,95)
  EXPECT_NEAR(*x.achieved_gbps, 375e6 / 15e6, 1e-9);
}

TEST(DeviceTimeline, WithoutDeviceRecordsNothingIsClaimed) {
  const Metrics x = metrics_of(trace_bytes([](capture::ChunkBuilder& b) {
    b.add(fb::ApiCall(kStart + kMs, kMs, 1, 0, 7, 0, 0, 2, 0, 0, 0, 0));
  }));
  EXPECT_EQ(x.gpu_busy_source, "none");
  EXPECT_FALSE(x.gpu_util.has_value());
  EXPECT_FALSE(x.device_kernel_share.has_value());
}

TEST(DeviceTimeline, ADeviceBusyGpuMakesLongSyncsHealthy) {
  const TraceModel empty;
  Metrics x = metrics_of(trace_bytes([](capture::ChunkBuilder& b) {
    b.add(fb::ApiCall(kStart, 95 * kMs, 1, 0, 7, 0, 0, 2, 0, 0, 0, 0));  // host: launch then wait
    b.add(device_kernel(1, 94));
  }));
  x.successful_launches = 1;
  x.gpu_work_done = true;
  x.syncs_per_launch = 0.0;
  x.judged_s = kMinJudgedSeconds;  // the rule under test, not the short-run floor
  x.launches = kMinWorkCalls;
  EXPECT_EQ(analyze(empty, x).verdict.cls, Bottleneck::Healthy);
}

fb::Alloc allocation(uint64_t at_ms, uint64_t address, fb::AllocOp op, fb::Source source) {
  return fb::Alloc(kStart + at_ms * kMs, source == fb::Source::Host ? kMs / 10 : 0, 0, address, 1 << 20, op,
                   fb::MemoryKind::Device, source, 0, 0, 0);
}

// CUPTI's MEMORY2 records repeat every hooked allocation, and arrive later:
// on the real H200 trace of alloc_churn the model counted 16002
// allocations for the program's 8001 cudaMalloc calls. A late copy of an
// allocation whose address was already freed and reused must not keep
// memory live either.
TEST(DeviceTimeline, CuptisCopiesOfAllocationsCountNeitherTwiceNorAsLive) {
  const Metrics x = metrics_of(trace_bytes([](capture::ChunkBuilder& b) {
    for (uint64_t i = 0; i < 3; ++i) {  // the same address allocated and freed three times
      b.add(allocation(10 * i + 1, 0x7000, fb::AllocOp::Alloc, fb::Source::Host));
      b.add(allocation(10 * i + 5, 0x7000, fb::AllocOp::Free, fb::Source::Host));
    }
    for (uint64_t i = 0; i < 3; ++i) {  // CUPTI's copies, delivered after all of it, the last free missing
      b.add(allocation(10 * i + 1, 0x7000, fb::AllocOp::Alloc, fb::Source::Device));
      if (i < 2) b.add(allocation(10 * i + 5, 0x7000, fb::AllocOp::Free, fb::Source::Device));
    }
  }));
  EXPECT_EQ(x.allocs, 3u);
  EXPECT_EQ(x.frees, 3u);
  EXPECT_EQ(x.live_end_bytes, 0) << "a copy's alloc after the last free left memory live";
}

}  // namespace
}  // namespace gpuscope::analyzer
