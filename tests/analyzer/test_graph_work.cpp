// CUDA graphs in the analysis (trace format 1.3), on a hand-built trace: a
// graph launch counts the kernels its graph ran, a call captured into a
// graph counts no kernel or copy, a prefetch is an async copy of managed
// memory — in the summary (`gpuscope info`), the model and metrics
// (`gpuscope analyze`), and both exports.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../support/exported.h"
#include "../support/model_of.h"
#include "../support/sample_trace.h"
#include "metrics.h"
#include "record_flags.h"

namespace gpuscope::test {
namespace {

using analyzer::CallKind;

constexpr uint64_t kT0 = 7'000'000'000;
constexpr uint32_t kLaunch = 1, kGraphLaunch = 2, kMemcpyAsync = 3, kPrefetch = 4, kKernelName = 5;
constexpr uint8_t kCaptured = container::kCallCaptured;

fb::ApiCall call(uint64_t corr, uint32_t function, uint8_t flags = 0) {
  return fb::ApiCall(kT0 + corr * 1000, 500, corr, 0x10, 42, 0, 0, function, 0, flags, 0, 0);
}

fb::GraphLaunch graph_launch(uint64_t corr, uint32_t kernels, uint32_t copies, uint32_t memsets, uint8_t flags) {
  return fb::GraphLaunch(kT0 + corr * 1000, 500, corr, 0x10, 0xE0, kernels, copies, memsets, 1, 0,
                         fb::Source::Host, flags, 0);
}

// One kernel launched on its own, one launch and one copy captured into a
// graph, two launches of a graph of 4 kernels, 1 copy, 2 memsets (the
// second of an exec not seen instantiated), one 1 MiB prefetch to a device.
std::vector<uint8_t> graph_trace() {
  capture::ProcessMetadata meta;
  meta.pid = 7;
  meta.exe = "/app/graphs";
  meta.start_monotonic_ns = kT0;
  return one_frame_trace(meta, kT0 + 100'000, [](capture::ChunkBuilder& b) {
    b.add_strings({{kLaunch, "__cudaLaunchKernel"},
                   {kGraphLaunch, "cudaGraphLaunch"},
                   {kMemcpyAsync, "cudaMemcpyAsync"},
                   {kPrefetch, "cudaMemPrefetchAsync"},
                   {kKernelName, "step"}});
    b.add(call(1, kLaunch));
    b.add(fb::Kernel(kT0 + 1000, 500, 1, 0x10, kKernelName, 4, 1, 1, 256, 1, 1, 0, 0, fb::Source::Host, 0, 0, 0));
    b.add(call(2, kLaunch, kCaptured));
    b.add(call(3, kMemcpyAsync, kCaptured));
    b.add(call(4, kGraphLaunch));
    b.add(graph_launch(4, 4, 1, 2, 0));
    b.add(call(5, kGraphLaunch));
    b.add(graph_launch(5, 0, 0, 0, container::kGraphContentsUnknown));
    b.add(call(6, kPrefetch));
    b.add(fb::Copy(kT0 + 6000, 500, 6, 1 << 20, 0x10, fb::CopyDirection::HostToDevice, fb::MemoryKind::Managed,
                   fb::MemoryKind::Managed, fb::Source::Host, 0, container::kCopyAsync | container::kCopyPrefetch));
  });
}

TEST(GraphWork, TheSummaryCountsGraphLaunchesTheirWorkAndCapturedCalls) {
  const analyzer::TraceModel m = model_of(graph_trace());
  const reader::TraceSummary& s = m.summary;
  EXPECT_EQ(s.counts.graph_launches, 2u);
  EXPECT_EQ(s.graphs.kernels, 4u);
  EXPECT_EQ(s.graphs.copies, 1u);
  EXPECT_EQ(s.graphs.memsets, 2u);
  EXPECT_EQ(s.graphs.unknown_launches, 1u);
  EXPECT_EQ(s.captured_calls, 2u);
  EXPECT_EQ(s.stats.records_invalid, 0u);
}

TEST(GraphWork, KernelsThatRanIncludeTheGraphsAndNotTheCapturedLaunch) {
  const analyzer::TraceModel m = model_of(graph_trace());
  EXPECT_EQ(m.kernels, 1u);  // launched on its own
  EXPECT_EQ(m.graph_launches, 2u);
  EXPECT_EQ(m.graph_work.kernels, 4u);
  EXPECT_EQ(m.captured_by_kind[static_cast<size_t>(CallKind::Launch)], 1u);
  EXPECT_EQ(m.captured_by_kind[static_cast<size_t>(CallKind::Copy)], 1u);
  const analyzer::Metrics x = analyzer::compute_metrics(m);
  EXPECT_EQ(x.kernels, 1u + 4u);
  EXPECT_EQ(x.graph_launches, 2u);
  EXPECT_EQ(x.graph_kernels, 4u);
  EXPECT_EQ(x.captured_calls, 2u);
  EXPECT_EQ(x.launches, 4u);  // launch calls: two kernel launches (one captured), two graph launches
}

TEST(GraphWork, APrefetchIsAnAsyncHostToDeviceCopyOfTheBytesAskedFor) {
  const analyzer::TraceModel m = model_of(graph_trace());
  const auto& h2d = m.copies_by_direction[static_cast<size_t>(fb::CopyDirection::HostToDevice)];
  EXPECT_EQ(h2d.count, 1u);  // the captured copy moved nothing
  EXPECT_EQ(h2d.prefetch_count, 1u);
  EXPECT_EQ(h2d.prefetch_bytes, 1u << 20);
  EXPECT_EQ(h2d.async_count, 1u);
  EXPECT_EQ(analyzer::compute_metrics(m).h2d_bytes, 1u << 20);
}

TEST(GraphWork, ExportsShowGraphLaunchesCapturedCallsAndPrefetches) {
  const Exported csv = export_bytes(graph_trace(), true);
  EXPECT_NE(csv.text.find("42,graph_launch,host,,,,0x10,0,4,,,\"graph exec 0xe0, 4 kernels, 1 copies, 2 memsets, "
                          "1 other nodes\""),
            std::string::npos)
      << csv.text;
  EXPECT_NE(csv.text.find("contents unknown"), std::string::npos);
  EXPECT_NE(csv.text.find("depth 0, captured into a graph"), std::string::npos);
  EXPECT_NE(csv.text.find("Managed -> Managed, async, prefetch"), std::string::npos);
  EXPECT_EQ(csv.result.stats.records, 10u);

  const Exported chrome = export_bytes(graph_trace());
  const auto doc = nlohmann::json::parse(chrome.text);
  int graph_launches = 0, captured = 0;
  for (const auto& e : doc["traceEvents"]) {
    if (!e.contains("args")) continue;
    const auto& args = e["args"];
    if (args.value("captured_into_graph", false)) ++captured;
    if (e["name"] == "cudaGraphLaunch" && args.contains("graph_kernels")) {
      ++graph_launches;
      EXPECT_EQ(args["graph_kernels"], 4);
      EXPECT_EQ(args["graph_memsets"], 2);
    }
  }
  EXPECT_EQ(graph_launches, 1);  // the other one's contents are unknown
  EXPECT_EQ(captured, 2);
  EXPECT_EQ(chrome.result.stats.unmatched_records, 0u);
}

}  // namespace
}  // namespace gpuscope::test
