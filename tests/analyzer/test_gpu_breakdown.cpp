// The GPU time breakdown as Holistic Trace Analysis computes it
// (analyzer/model/gpu_breakdown.h), on hand-built device records whose
// answers are worked out by hand in the comments.
#include <gtest/gtest.h>

#include "../support/sample_trace.h"
#include "chunk_builder.h"
#include "gpu_breakdown.h"
#include "metrics.h"
#include "pipeline.h"
#include "report.h"
#include "trace_model.h"

namespace gpuscope::analyzer {
namespace {

constexpr uint64_t kStart = 1'000'000'000;  // process start (monotonic ns)
constexpr uint64_t kUs = 1'000;
constexpr uint32_t kTid = 7;
enum Name : uint32_t { kLaunch = 1, kGemm, kRelu, kAllReduce, kStep1, kStep2, kMemcpyAsync };

uint64_t at(int64_t us) { return static_cast<uint64_t>(static_cast<int64_t>(kStart) + us * 1000); }

fb::ApiCall launch(int64_t at_us, uint64_t correlation, uint32_t function = kLaunch) {
  return fb::ApiCall(at(at_us), 2 * kUs, correlation, 0, kTid, 0, 0, function, 0, 0, 0, 0);
}
fb::Kernel kernel(uint32_t name, int64_t from_us, int64_t to_us, uint64_t stream, uint64_t correlation,
                  int16_t device = 0) {
  return fb::Kernel(at(from_us), (to_us - from_us) * kUs, correlation, stream, name, 1, 1, 1, 1, 1, 1, device, 0,
                    fb::Source::Device, 0, 0, 0);
}
fb::Copy copy(int64_t from_us, int64_t to_us, uint64_t stream, uint64_t correlation) {
  return fb::Copy(at(from_us), (to_us - from_us) * kUs, correlation, 4096, stream, fb::CopyDirection::HostToDevice,
                  fb::MemoryKind::Pinned, fb::MemoryKind::Device, fb::Source::Device, 0, 1);
}
fb::Memset memset(int64_t from_us, int64_t to_us, uint64_t stream, uint64_t correlation) {
  return fb::Memset(at(from_us), (to_us - from_us) * kUs, correlation, 4096, stream, 0, fb::MemoryKind::Device,
                    fb::Source::Device, 0);
}

std::vector<uint8_t> trace_bytes(const std::function<void(capture::ChunkBuilder&)>& fill) {
  capture::ProcessMetadata meta;
  meta.pid = 1;
  meta.exe = "/app/train";
  meta.start_monotonic_ns = kStart - 1'000'000;
  return test::one_frame_trace(meta, at(10'000), [&](capture::ChunkBuilder& b) {
    b.add_strings({{kLaunch, "cudaLaunchKernel"},
                   {kGemm, "sm90_xmma_gemm_f16f16_f32"},
                   {kRelu, "void at::native::vectorized_elementwise_kernel<4, relu>"},
                   {kAllReduce, "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"},
                   {kStep1, "ProfilerStep#1"},
                   {kStep2, "ProfilerStep#2"},
                   {kMemcpyAsync, "cudaMemcpyAsync"}});
    fill(b);
  });
}

Metrics metrics_of(const std::vector<uint8_t>& bytes) {
  const PipelineResult r = analyze_trace(reader::memory_source(bytes), "t.gpuscope", {}, {});
  EXPECT_NE(r.analysis, nullptr) << r.error.message;
  return r.analysis ? r.analysis->metrics() : Metrics{};
}

// Stream 1: gemm [0,100), copy [110,150), relu [300,400), gemm [500,600);
// stream 2: an NCCL all-reduce [50,350), a memset [700,710). Launches:
// the copy's at 5 (before the gemm ended: a 10 us gap is kernel wait), the
// relu's at 250 (after the copy ended: host wait 150), the second gemm's at
// 120 (queued early, 100 us gap: other), the memset's at 690 (host wait 350).
void two_streams(capture::ChunkBuilder& b) {
  b.add(launch(-10, 1));
  b.add(launch(5, 2, kMemcpyAsync));
  b.add(launch(250, 3));
  b.add(launch(120, 4));
  b.add(launch(40, 5));
  b.add(launch(690, 6));
  b.add(kernel(kAllReduce, 50, 350, 2, 5));  // records out of start order
  b.add(kernel(kGemm, 500, 600, 1, 4));
  b.add(kernel(kRelu, 300, 400, 1, 3));
  b.add(kernel(kGemm, 0, 100, 1, 1));
  b.add(copy(110, 150, 1, 2));
  b.add(memset(700, 710, 2, 6));
}

TEST(GpuBreakdown, TwoStreamsSplitAsHtaSplitsThem) {
  const Metrics x = metrics_of(trace_bytes(two_streams));
  ASSERT_EQ(x.gpu_time_breakdown.size(), 1u);
  const GpuTimeSplit& t = x.gpu_time_breakdown[0];
  EXPECT_EQ(t.device, 0);
  // Union [0,400) [500,600) [700,710) = 510 of the 710 us span; compute
  // (gemm, relu, gemm) 300; the all-reduce, copy and memset add 210.
  EXPECT_NEAR(t.span_s, 710e-6, 1e-12);
  EXPECT_NEAR(t.idle_share, 200.0 / 710, 1e-9);
  EXPECT_NEAR(t.compute_share, 300.0 / 710, 1e-9);
  EXPECT_NEAR(t.non_compute_share, 210.0 / 710, 1e-9);
  // Gaps: host wait 150 + 350, kernel wait 10, other 100.
  EXPECT_NEAR(*t.host_wait_share, 500.0 / 610, 1e-9);
  EXPECT_NEAR(*t.kernel_wait_share, 10.0 / 610, 1e-9);
  EXPECT_NEAR(*t.other_wait_share, 100.0 / 610, 1e-9);
  EXPECT_FALSE(x.last_profiler_step_left_out);
  EXPECT_EQ(x.gpu_breakdown_left_out, 0u);
}

TEST(GpuBreakdown, ReportsShowTheSplit) {
  const PipelineResult r = analyze_trace(reader::memory_source(trace_bytes(two_streams)), "t.gpuscope", {}, {});
  ASSERT_NE(r.analysis, nullptr);
  const std::string text = text_report(r.analysis->report_input(5));
  EXPECT_NE(text.find("GPU time breakdown (as HTA computes it, over the 0.001 s from the first GPU operation to the "
                      "last): idle 28.2%, compute 42.3%, non-compute 29.6%"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("idle: host wait 82.0%, kernel wait 1.6%, other 16.4%"), std::string::npos) << text;
  const auto doc = json_report(r.analysis->report_input(5));
  const auto& device = doc["breakdown"]["gpu_time_breakdown"]["devices"][0];
  EXPECT_NEAR(device["idle_host_wait_share"].get<double>(), 500.0 / 610, 1e-9);
  EXPECT_NEAR(device["compute_share"].get<double>(), 300.0 / 710, 1e-9);
}

// Sampled device tracing, windows [0,200) and [480,720) us over the two
// streams above: records exist only inside them, so the span is their 430
// us up to the last operation's end (200 + 230), not the 710 from first to
// last. Busy in them: [0,200) + [500,600) + [700,710) = 310; compute: gemm
// [0,100) and gemm [500,600) = 200. No idle split: stream 1's gap from the
// copy to the relu runs across the gap between windows.
TEST(GpuBreakdown, SampledTracingCountsOnlyTheWindowsTime) {
  const Metrics x = metrics_of(trace_bytes([](capture::ChunkBuilder& b) {
    two_streams(b);
    for (const auto& [from, to] : {std::pair<int64_t, int64_t>{0, 200}, {480, 720}})
      b.add(fb::Marker(at(from), (to - from) * kUs, 0, 0, 0, 0, fb::MarkerKind::DeviceWindow, 0, 0));
  }));
  ASSERT_EQ(x.gpu_time_breakdown.size(), 1u);
  const GpuTimeSplit& t = x.gpu_time_breakdown[0];
  EXPECT_EQ(t.sampled_windows, 2u);
  EXPECT_NEAR(t.span_s, 430e-6, 1e-12);
  EXPECT_NEAR(t.idle_share, 120.0 / 430, 1e-9);
  EXPECT_NEAR(t.compute_share, 200.0 / 430, 1e-9);
  EXPECT_NEAR(t.non_compute_share, 110.0 / 430, 1e-9);
  EXPECT_FALSE(t.host_wait_share.has_value());
}

TEST(GpuBreakdown, WithoutDeviceRecordsThereIsNone) {
  const Metrics x = metrics_of(trace_bytes([](capture::ChunkBuilder& b) { b.add(launch(0, 1)); }));
  EXPECT_TRUE(x.gpu_time_breakdown.empty());
}

// Two steps [0,1000) and [1000,2000): the kernel launched in the second one
// and the kernel whose launch is unknown are left out, as HTA leaves them out.
TEST(GpuBreakdown, TheLastOfTwoProfilerStepsIsLeftOut) {
  const Metrics x = metrics_of(trace_bytes([](capture::ChunkBuilder& b) {
    for (const auto& [name, from] : {std::pair{kStep1, 0}, std::pair{kStep2, 1000}}) {
      b.add(fb::Marker(at(from), 0, 0, name, 0, kTid, fb::MarkerKind::RangePush, 0, 0));
      b.add(fb::Marker(at(from + 1000), 0, 0, 0, 0, kTid, fb::MarkerKind::RangePop, 0, 0));
    }
    b.add(launch(100, 1));
    b.add(kernel(kGemm, 200, 300, 1, 1));
    b.add(launch(150, 2));
    b.add(kernel(kRelu, 350, 400, 1, 2));  // gap 50 us, launched before: other
    b.add(kernel(kRelu, 400, 450, 1, 99));  // no launch call
    b.add(launch(1100, 3));
    b.add(kernel(kGemm, 1200, 1300, 1, 3));
  }));
  ASSERT_EQ(x.gpu_time_breakdown.size(), 1u);
  const GpuTimeSplit& t = x.gpu_time_breakdown[0];
  EXPECT_TRUE(x.last_profiler_step_left_out);
  EXPECT_EQ(x.gpu_breakdown_left_out, 2u);
  EXPECT_NEAR(t.span_s, 200e-6, 1e-12);
  EXPECT_NEAR(t.idle_share, 50.0 / 200, 1e-9);
  EXPECT_NEAR(*t.other_wait_share, 1.0, 1e-9);
}

TEST(GpuBreakdown, OneProfilerStepLeavesNothingOut) {
  const Metrics x = metrics_of(trace_bytes([](capture::ChunkBuilder& b) {
    b.add(fb::Marker(at(0), 0, 0, kStep1, 0, kTid, fb::MarkerKind::RangePush, 0, 0));
    b.add(fb::Marker(at(1000), 0, 0, 0, 0, kTid, fb::MarkerKind::RangePop, 0, 0));
    b.add(kernel(kGemm, 200, 300, 1, 99));
    b.add(kernel(kGemm, 1200, 1300, 1, 98));
  }));
  ASSERT_EQ(x.gpu_time_breakdown.size(), 1u);
  EXPECT_FALSE(x.last_profiler_step_left_out);
  EXPECT_NEAR(x.gpu_time_breakdown[0].span_s, 1100e-6, 1e-12);
}

// A stream synchronization the device reported (no device of its own) is
// GPU time that is not compute, on the trace's only device; it splits no gap.
TEST(GpuBreakdown, DeviceStreamSynchronizationsAreNonCompute) {
  const Metrics x = metrics_of(trace_bytes([](capture::ChunkBuilder& b) {
    b.add(kernel(kGemm, 0, 100, 1, 0));
    b.add(fb::Sync(at(100), 50 * kUs, 0, 1, fb::SyncKind::Stream, fb::Source::Device, -1, 0));
    b.add(fb::Sync(at(160), 10 * kUs, 0, 0, fb::SyncKind::Context, fb::Source::Device, -1, 0));  // not on a stream
    b.add(kernel(kGemm, 200, 300, 1, 0));
  }));
  ASSERT_EQ(x.gpu_time_breakdown.size(), 1u);
  const GpuTimeSplit& t = x.gpu_time_breakdown[0];
  EXPECT_NEAR(t.compute_share, 200.0 / 300, 1e-9);
  EXPECT_NEAR(t.non_compute_share, 50.0 / 300, 1e-9);
  EXPECT_NEAR(*t.other_wait_share, 1.0, 1e-9);  // the 100 us gap between the kernels
}

TEST(GpuBreakdown, KernelNamesAreClassifiedAsHtaClassifiesThem) {
  EXPECT_FALSE(is_compute_kernel_name("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)"));
  EXPECT_FALSE(is_compute_kernel_name("ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"));
  EXPECT_FALSE(is_compute_kernel_name("Memcpy DtoD (Device -> Device)"));
  EXPECT_FALSE(is_compute_kernel_name("Memset (Device)"));
  EXPECT_FALSE(is_compute_kernel_name("Stream Sync"));
  EXPECT_TRUE(is_compute_kernel_name("nccl_helper"));  // an NCCL name without "Kernel" is not communication
  EXPECT_TRUE(is_compute_kernel_name("void at::native::vectorized_elementwise_kernel<4, relu>"));
  EXPECT_TRUE(is_compute_kernel_name("fused_Memset_like"));  // "Memset" counts only at the start
}

// Direct use of the builder, with small bounds.
struct BuilderRun {
  reader::TraceSummary names;
  std::vector<fb::ApiCall> calls;
  std::vector<fb::Kernel> kernels;
  GpuBreakdown run(const GpuBreakdownLimits& limits, uint64_t last_step = 0) {
    names.strings[kGemm] = "gemm";
    GpuBreakdownBuilder b(names, last_step, limits);
    reader::ChunkView v;
    v.api_calls = calls;
    v.kernels = kernels;
    b.add(v, [](uint64_t) { return true; });
    return b.finish();
  }
};

// Kernels every 10 us, 5 us long, back to back launches; the one that
// arrives after ten later ones have left a window of four is late: its time
// counts, its gap does not.
TEST(GpuBreakdown, ARecordLaterThanTheReorderWindowIsCountedAndKeptOutOfTheIdleSplit) {
  BuilderRun r;
  for (int i = 0; i < 16; ++i)
    if (i != 3) r.kernels.push_back(kernel(kGemm, i * 10, i * 10 + 5, 1, 0));
  r.kernels.push_back(kernel(kGemm, 30, 35, 1, 0));
  const GpuBreakdown b = r.run({.reorder_window = 4});
  EXPECT_EQ(b.late, 1u);
  ASSERT_EQ(b.devices.size(), 1u);
  EXPECT_EQ(b.devices[0].busy_ns, 16 * 5 * kUs);
  EXPECT_EQ(b.devices[0].idle.kernel_wait_ns, static_cast<int64_t>((14 * 5 + 10) * kUs));  // 2->4 spans 15 us
  // Within the window the same records come out in order, nothing late.
  const GpuBreakdown in_window = r.run({.reorder_window = 16});
  EXPECT_EQ(in_window.late, 0u);
  EXPECT_EQ(in_window.devices[0].idle.kernel_wait_ns, static_cast<int64_t>(15 * 5 * kUs));
}

TEST(GpuBreakdown, TheLaunchTableIsBoundedAndCountsWhatItForgets) {
  BuilderRun r;
  for (uint64_t i = 1; i <= 6; ++i) r.calls.push_back(launch(static_cast<int64_t>(i), i));
  r.kernels.push_back(kernel(kGemm, 100, 110, 1, 1));  // its launch forgotten: left out after the cut
  r.kernels.push_back(kernel(kGemm, 120, 130, 1, 6));
  const GpuBreakdown b = r.run({.pending_launches = 4}, at(1000));
  EXPECT_EQ(b.launches_forgotten, 2u);
  EXPECT_EQ(b.left_out, 1u);
  ASSERT_EQ(b.devices.size(), 1u);
  EXPECT_EQ(b.devices[0].operations, 1u);
}

// Ids are handed out densely but arrive out of order across threads: id 2
// is four launches older than id 6, which a table of four has forgotten, so
// arriving late it does not push the newer one out of their shared slot.
TEST(GpuBreakdown, AnOlderLaunchDoesNotEvictANewerOneFromTheTable) {
  BuilderRun r;
  r.calls.push_back(launch(1, 6));
  r.calls.push_back(launch(2, 2));  // the same slot of 4 as 6, older
  r.kernels.push_back(kernel(kGemm, 100, 110, 1, 6));
  r.kernels.push_back(kernel(kGemm, 120, 130, 1, 2));
  const GpuBreakdown b = r.run({.pending_launches = 4}, at(1000));
  EXPECT_EQ(b.launches_forgotten, 1u);
  EXPECT_EQ(b.left_out, 1u);  // the kernel of launch 2
  ASSERT_EQ(b.devices.size(), 1u);
  EXPECT_EQ(b.devices[0].operations, 1u);
  // With room for both, both are found.
  const GpuBreakdown roomy = r.run({.pending_launches = 8}, at(1000));
  EXPECT_EQ(roomy.launches_forgotten, 0u);
  EXPECT_EQ(roomy.left_out, 0u);
}

// Until the first device record the launch table is small (a host-only
// trace never needs the 16 MB one); at the first one it grows, keeping what
// it holds, and from then on holds kMaxPendingLaunches.
TEST(GpuBreakdown, TheLaunchTableGrowsAtTheFirstDeviceRecord) {
  reader::TraceSummary names;
  names.strings[kGemm] = "gemm";
  GpuBreakdownBuilder b(names, at(100'000), {});
  const auto all = [](uint64_t) { return true; };
  constexpr uint64_t kHostOnly = kHostOnlyLaunchSlots + kHostOnlyLaunchSlots / 2;
  std::vector<fb::ApiCall> calls;
  for (uint64_t id = 1; id <= kHostOnly; ++id) calls.push_back(launch(1, id));
  reader::ChunkView host;
  host.api_calls = calls;
  b.add(host, all);
  // The first device records: the newest launches are still known, the
  // oldest gave their slots to newer ones.
  std::vector<fb::Kernel> kernels = {kernel(kGemm, 10, 20, 1, kHostOnly), kernel(kGemm, 30, 40, 1, 1)};
  reader::ChunkView first;
  first.kernels = kernels;
  b.add(first, all);
  // From here the table holds far more than the small one did.
  calls.clear();
  for (uint64_t id = kHostOnly + 1; id <= kHostOnly + 4 * kHostOnlyLaunchSlots; ++id) calls.push_back(launch(50, id));
  kernels = {kernel(kGemm, 60, 70, 1, kHostOnly + 1)};
  reader::ChunkView later;
  later.api_calls = calls;
  later.kernels = kernels;
  b.add(later, all);
  const GpuBreakdown out = b.finish();
  EXPECT_EQ(out.launches_forgotten, kHostOnly - kHostOnlyLaunchSlots) << "only the small table's overwrites";
  EXPECT_EQ(out.left_out, 1u) << "the kernel of launch 1";
  ASSERT_EQ(out.devices.size(), 1u);
  EXPECT_EQ(out.devices[0].operations, 2u);
}

TEST(GpuBreakdown, StreamsPastTheLimitAreCountedNotKept) {
  BuilderRun r;
  for (uint64_t s = 1; s <= 5; ++s) r.kernels.push_back(kernel(kGemm, 0, 10, s, 0));
  const GpuBreakdown b = r.run({.streams = 3});
  EXPECT_EQ(b.streams_over_limit, 2u);
  EXPECT_EQ(b.devices[0].operations, 3u);
}

}  // namespace
}  // namespace gpuscope::analyzer
