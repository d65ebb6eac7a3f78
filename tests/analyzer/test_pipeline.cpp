// The analysis pipeline (analyzer/pipeline.h): what it reads and how often,
// that its analysis is the one the steps give by hand, and that its errors
// name what was wrong and where. Also the one rule for "simulated GPU" that
// every output follows.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../support/exported.h"
#include "../support/sample_trace.h"
#include "chunk_builder.h"
#include "html_report.h"
#include "pipeline.h"
#include "site_merge.h"
#include "report.h"

namespace gpuscope::analyzer {
namespace {

constexpr uint64_t kStart = 1'000'000'000, kMs = 1'000'000;
constexpr uint32_t kTid = 42;

fb::Marker marker(uint64_t at, fb::MarkerKind kind, uint32_t name = 0, uint64_t duration = 0) {
  return fb::Marker(at, duration, 0, name, 0, kTid, kind, 0, 0);
}

// Ten launches 10 ms apart on one thread, around `extra` records.
std::vector<uint8_t> trace_with(const std::function<void(capture::ChunkBuilder&)>& extra,
                                const capture::ProcessMetadata& meta = {}) {
  capture::ProcessMetadata m = meta;
  m.pid = 7;
  m.exe = "/app/train";
  m.start_monotonic_ns = kStart;
  return test::one_frame_trace(m, kStart + 100 * kMs, [&](capture::ChunkBuilder& b) {
    b.add_strings({{1, "cudaLaunchKernel"}, {2, "train_step"}, {3, "scale"}});
    for (uint64_t i = 0; i < 10; ++i) {
      b.add(fb::ApiCall(kStart + i * 10 * kMs, kMs, i + 1, 7, kTid, 0, 0, 1, 0, 0, 0, 0));
      b.add(fb::Kernel(kStart + i * 10 * kMs, kMs, i + 1, 7, 3, 1, 1, 1, 1, 1, 1, 0, 0, fb::Source::Host, 0, 0, 0));
    }
    extra(b);
  });
}

PipelineResult analyze_bytes(const std::vector<uint8_t>& bytes, const AnalysisScope& scope = {},
                             const FollowingPass& following = {}) {
  return analyze_trace(reader::memory_source(bytes), "t.gpuscope", scope, following);
}

TEST(Pipeline, ATraceWithoutRangesOrCaptureWindowsIsReadOnce) {
  const auto sample = test::make_sample_trace(4, 2000);
  const PipelineResult r = analyze_bytes(sample.bytes);
  ASSERT_NE(r.analysis, nullptr) << r.error.message;
  EXPECT_EQ(r.analysis->passes(), 1u);
  EXPECT_EQ(r.analysis->model().summary.counts.total(), sample.records);
  EXPECT_FALSE(r.analysis->analysis().verdict.headline.empty());
  EXPECT_EQ(r.analysis->problems().size(), 0u);
}

TEST(Pipeline, NvtxRangesCostOneMorePassThatPlacesTheCallsInThem) {
  const auto bytes = trace_with([](capture::ChunkBuilder& b) {
    b.add(marker(kStart + 15 * kMs, fb::MarkerKind::RangePush, 2));
    b.add(marker(kStart + 55 * kMs, fb::MarkerKind::RangePop));
  });
  const PipelineResult r = analyze_bytes(bytes);
  ASSERT_NE(r.analysis, nullptr) << r.error.message;
  EXPECT_EQ(r.analysis->passes(), 2u);
  const TraceModel& m = r.analysis->model();
  EXPECT_TRUE(m.ranges_attributed);
  ASSERT_EQ(m.range_stats.size(), 1u);
  EXPECT_EQ(m.range_stats[0].name, "train_step");
  EXPECT_EQ(m.range_stats[0].calls, 4u);  // the launches at 20, 30, 40 and 50 ms
}

TEST(Pipeline, CaptureWindowsScopeTheAnalysisToThemInASecondPass) {
  const auto bytes = trace_with([](capture::ChunkBuilder& b) {
    b.add(marker(kStart + 30 * kMs, fb::MarkerKind::CaptureWindow, 0, 20 * kMs));
  });
  const PipelineResult r = analyze_bytes(bytes);
  ASSERT_NE(r.analysis, nullptr) << r.error.message;
  EXPECT_EQ(r.analysis->passes(), 2u);
  EXPECT_EQ(r.analysis->model().wall_ns(), 20 * kMs);
  EXPECT_EQ(r.analysis->model().host_by_kind[static_cast<size_t>(CallKind::Launch)].count, 2u);  // 30 and 40 ms
}

// Sampled device tracing: the device records exist only inside its
// windows, so the figures and the verdict are judged there, host calls
// included; with capture windows too, inside both.
TEST(Pipeline, SampledDeviceWindowsScopeTheAnalysisAndTheReportSaysSo) {
  const auto bytes = trace_with([](capture::ChunkBuilder& b) {
    b.add_strings({{9, "20 ms every 60 ms"}});
    b.add(marker(kStart + 10 * kMs, fb::MarkerKind::DeviceWindow, 9, 20 * kMs));
    b.add(marker(kStart + 70 * kMs, fb::MarkerKind::DeviceWindow, 9, 20 * kMs));
  });
  PipelineResult r = analyze_bytes(bytes);
  ASSERT_NE(r.analysis, nullptr) << r.error.message;
  const TraceModel& m = r.analysis->model();
  EXPECT_EQ(m.device_windows.size(), 2u);
  EXPECT_EQ(m.device_schedule, "20 ms every 60 ms");
  EXPECT_EQ(m.wall_ns(), 40 * kMs);
  EXPECT_EQ(m.host_by_kind[static_cast<size_t>(CallKind::Launch)].count, 4u);  // 10, 20, 70 and 80 ms
  const std::string text = text_report(r.analysis->report_input(5));
  EXPECT_NE(text.find("device activity sampled (20 ms every 60 ms): 2 window(s), 0.040 s"), std::string::npos) << text;
  EXPECT_NE(text.find("device activity: sampled (20 ms every 60 ms), 2 window(s), 0.040 s of the 0.100 s traced"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("its 2 window(s) are all that is judged: run longer"), std::string::npos)
      << "40 ms judged is too short, and the reason names the sampling: " << text;

  r = analyze_bytes(trace_with([](capture::ChunkBuilder& b) {
    b.add(marker(kStart + 10 * kMs, fb::MarkerKind::DeviceWindow, 0, 20 * kMs));
    b.add(marker(kStart + 70 * kMs, fb::MarkerKind::DeviceWindow, 0, 20 * kMs));
    b.add(marker(kStart + 15 * kMs, fb::MarkerKind::CaptureWindow, 0, 60 * kMs));
  }));
  ASSERT_NE(r.analysis, nullptr) << r.error.message;
  EXPECT_EQ(r.analysis->model().wall_ns(), 20 * kMs);  // 15-30 and 70-75 ms
  EXPECT_EQ(r.analysis->model().host_by_kind[static_cast<size_t>(CallKind::Launch)].count, 2u);  // 20 and 70 ms
}

TEST(Pipeline, ItsAnalysisIsTheOneTheStepsGiveByHand) {
  const auto bytes = test::make_sample_trace(3, 3000).bytes;
  const PipelineResult r = analyze_bytes(bytes);
  ASSERT_NE(r.analysis, nullptr) << r.error.message;
  reader::TraceReader reader;
  std::string error;
  ASSERT_TRUE(reader.open(reader::memory_source(bytes), "t.gpuscope", &error)) << error;
  const TraceModel model = build_model(reader);
  const Metrics metrics = compute_metrics(model);
  Analysis analysis = analyze(model, metrics);
  attribute_findings_to_ranges(model, &analysis);
  const Symbolizer symbols(model.summary);
  merge_sites_shown_alike(symbols, &analysis);
  const ReportInput by_hand{"t.gpuscope", model, metrics, analysis, symbols, 5};
  EXPECT_EQ(json_report(r.analysis->report_input(5)).dump(), json_report(by_hand).dump());
  EXPECT_EQ(text_report(r.analysis->report_input(5)), text_report(by_hand));
}

TEST(Pipeline, ErrorsAreValuesThatNameWhatAndWhere) {
  const std::vector<uint8_t> junk = {'h', 'e', 'l', 'l', 'o', '\n'};
  PipelineResult r = analyze_bytes(junk);
  EXPECT_EQ(r.analysis, nullptr);
  EXPECT_EQ(r.error.message, "t.gpuscope is not a gpuscope trace (no gpuscope file header at offset 0)");

  AnalysisScope scope;
  ASSERT_FALSE(parse_scope("", "checkpoint", &scope).has_value());
  r = analyze_bytes(trace_with([](capture::ChunkBuilder&) {}), scope);
  EXPECT_EQ(r.analysis, nullptr);
  EXPECT_EQ(r.error.message, "--range checkpoint: t.gpuscope has no NVTX range with that message");

  const auto bad = parse_scope("3:1", "", &scope);
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ(bad->message, "--window 3:1: expected START:END in seconds, END after START (e.g. 2:10, 5:)");

  r = analyze_trace("/nonexistent/dir/t.gpuscope");
  EXPECT_EQ(r.analysis, nullptr);
  EXPECT_EQ(r.error.message, "cannot open /nonexistent/dir/t.gpuscope: No such file or directory");
}

TEST(Pipeline, ARangeScopeKeepsOnlyTheRangesTime) {
  const auto bytes = trace_with([](capture::ChunkBuilder& b) {
    b.add(marker(kStart + 15 * kMs, fb::MarkerKind::RangePush, 2));
    b.add(marker(kStart + 55 * kMs, fb::MarkerKind::RangePop));
  });
  AnalysisScope scope;
  ASSERT_FALSE(parse_scope("", "train_step", &scope).has_value());
  const PipelineResult r = analyze_bytes(bytes, scope);
  ASSERT_NE(r.analysis, nullptr) << r.error.message;
  EXPECT_EQ(r.analysis->model().wall_ns(), 40 * kMs);
  EXPECT_EQ(r.analysis->model().scope_range, "train_step");
  EXPECT_EQ(r.analysis->passes(), 2u);
}

// A following pass (the HTML report's timeline) counts the chunks it is fed
// and records the model it was made from.
struct Following {
  int made = 0;
  uint64_t chunks = 0;
  bool ranges_attributed = false;
  FollowingPass pass() {
    return [this](const TraceModel& model, const Metrics&) {
      ++made;
      ranges_attributed = model.ranges_attributed;
      return [this](const reader::ChunkView&) { ++chunks; };
    };
  }
};

std::vector<uint8_t> ranges_trace(int frames) {
  auto sample = test::make_sample_trace(frames, 500);
  // make_sample_trace's threads are 1000..1003; a range around the first 2 ms on each.
  capture::ChunkBuilder b;
  for (uint32_t tid = 1000; tid < 1004; ++tid) {
    b.add(fb::Marker(1'000'000'000, 0, 0, 13, 0, tid, fb::MarkerKind::RangePush, 0, 0));
    b.add(fb::Marker(1'002'000'000, 0, 0, 0, 0, tid, fb::MarkerKind::RangePop, 0, 0));
  }
  capture::FrameEncoder encoder(1);
  const auto frame = encoder.encode(b.build(), static_cast<uint32_t>(frames));
  sample.bytes.insert(sample.bytes.end(), reinterpret_cast<const uint8_t*>(frame.data()),
                      reinterpret_cast<const uint8_t*>(frame.data()) + frame.size());
  return sample.bytes;
}

TEST(Pipeline, AFollowingPassRidesAlongTheSecondPassOfATraceWithRanges) {
  Following f;
  const PipelineResult r = analyze_bytes(ranges_trace(3), {}, f.pass());
  ASSERT_NE(r.analysis, nullptr) << r.error.message;
  EXPECT_TRUE(r.analysis->model().ranges_attributed);
  ASSERT_FALSE(r.analysis->model().range_stats.empty());
  EXPECT_EQ(r.analysis->passes(), 2u);  // was 3: the model's two, then the timeline's
  EXPECT_EQ(f.made, 1);
  EXPECT_EQ(f.chunks, 4u);
  EXPECT_FALSE(f.ranges_attributed);  // made from the first pass's model
}

TEST(Pipeline, AFollowingPassGetsItsOwnPassWhenTheAnalysisHasOneOrIsScoped) {
  Following plain;
  PipelineResult r = analyze_bytes(test::make_sample_trace(3, 500).bytes, {}, plain.pass());
  ASSERT_NE(r.analysis, nullptr) << r.error.message;
  EXPECT_EQ(r.analysis->passes(), 2u);
  EXPECT_EQ(plain.made, 1);
  EXPECT_EQ(plain.chunks, 3u);

  // Capture windows change what the second pass keeps (the threads' time,
  // the feeding thread): the pass is made from the final analysis.
  Following windowed;
  r = analyze_bytes(trace_with([](capture::ChunkBuilder& b) {
        b.add(marker(kStart + 30 * kMs, fb::MarkerKind::CaptureWindow, 0, 20 * kMs));
        b.add(marker(kStart + 35 * kMs, fb::MarkerKind::RangePush, 2));
        b.add(marker(kStart + 45 * kMs, fb::MarkerKind::RangePop));
      }),
      {}, windowed.pass());
  ASSERT_NE(r.analysis, nullptr) << r.error.message;
  EXPECT_EQ(r.analysis->passes(), 3u);
  EXPECT_EQ(windowed.made, 1);
  EXPECT_EQ(windowed.chunks, 1u);
  EXPECT_TRUE(windowed.ranges_attributed);
}

// The HTML section is the same whether its timeline rode along the
// analysis' pass (made from the first model) or read the trace after it.
TEST(Pipeline, ARiddenAlongTimelineDrawsWhatASeparatePassDraws) {
  const auto bytes = ranges_trace(3);
  std::unique_ptr<Timeline> timeline;
  const PipelineResult r =
      analyze_bytes(bytes, {}, [&](const TraceModel& model, const Metrics& metrics) -> reader::ChunkVisitor {
        timeline = std::make_unique<Timeline>(model, metrics);
        return [t = timeline.get()](const reader::ChunkView& v) { t->add(v); };
      });
  ASSERT_NE(r.analysis, nullptr) << r.error.message;
  const auto ridden = html_section(r.analysis->report_input(5), *timeline);
  reader::TraceReader again;
  std::string error;
  ASSERT_TRUE(again.open(reader::memory_source(bytes), "t.gpuscope", &error)) << error;
  const auto separate = html_section(r.analysis->report_input(5), again);
  EXPECT_EQ(ridden.dump(), separate.dump());
  EXPECT_FALSE(ridden["timeline"]["lanes"].empty());
}

// One rule for every output that says "simulated": a device that names
// itself simgpu or "(simulated)" (as simgpu names all of its devices), and
// nothing else. The export used to count SIMGPU_NODE in the environment,
// the HTML report only names starting with "simgpu": they disagreed.
struct SimulatedCase {
  std::string device;
  std::vector<std::pair<std::string, std::string>> environment;
  bool simulated;
};

class SimulatedGpu : public ::testing::TestWithParam<SimulatedCase> {};

TEST_P(SimulatedGpu, TheExportAndTheReportSayTheSame) {
  const SimulatedCase& c = GetParam();
  capture::ProcessMetadata meta;
  meta.environment = c.environment;
  const auto bytes = trace_with([&](capture::ChunkBuilder& b) {
    container::DeviceDescription dev;
    dev.name = c.device;
    b.add_device(dev);
  }, meta);
  PipelineResult r = analyze_bytes(bytes);
  ASSERT_NE(r.analysis, nullptr) << r.error.message;
  EXPECT_EQ(r.analysis->model().summary.on_simulated_gpu(), c.simulated);
  const auto section = html_section(r.analysis->report_input(5), r.analysis->reader());
  EXPECT_EQ(section["simulated"], c.simulated) << c.device;
  const auto exported = nlohmann::json::parse(test::export_bytes(bytes).text);
  EXPECT_EQ(exported["metadata"]["simulated"], c.simulated) << c.device;
}

INSTANTIATE_TEST_SUITE_P(
    Devices, SimulatedGpu,
    ::testing::Values(SimulatedCase{"simgpu H200 (simulated)", {}, true},
                      SimulatedCase{"MIG A100-like (simulated)", {}, true},
                      SimulatedCase{"an H200 served by simgpu", {}, true},
                      SimulatedCase{"NVIDIA H100 80GB HBM3", {{"SIMGPU_NODE", "/etc/simgpu/node.json"}}, false},
                      SimulatedCase{"NVIDIA H100 80GB HBM3", {}, false}));

}  // namespace
}  // namespace gpuscope::analyzer
