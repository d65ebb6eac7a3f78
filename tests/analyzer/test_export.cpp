// The exporters on hand-built traces: Chrome trace-event JSON (flows from a
// launch to its kernel, NVTX push/pop nesting and start/end ranges, device
// lanes, counters, clamping of damaged spans, escaping) and CSV.
#include <gtest/gtest.h>

#include <cstdio>
#include <sstream>

#include "../support/export_traces.h"
#include "../support/exported.h"
#include "../support/sample_trace.h"
#include "../support/trace_event_check.h"
#include "chrome_trace.h"
#include "json_escape.h"
#include "sink_pipeline.h"
#include "viewer_limits.h"

namespace gpuscope::test {
namespace {

using namespace gpuscope::exporter;

std::vector<nlohmann::json> events_named(const nlohmann::json& doc, const std::string& name,
                                         const std::string& ph = "") {
  std::vector<nlohmann::json> out;
  for (const auto& e : doc["traceEvents"])
    if (e["name"] == name && (ph.empty() || e["ph"] == ph)) out.push_back(e);
  return out;
}

TEST(ChromeTrace, HandBuiltTraceIsValidAndNested) {
  const Exported e = export_bytes(flow_and_nvtx_trace().bytes);
  const TraceEventCheck c = check_trace_events(e.text);
  ASSERT_TRUE(c.ok()) << c.first_errors() << e.text;
  EXPECT_EQ(c.doc["displayTimeUnit"], "ns");
  EXPECT_EQ(c.doc["metadata"]["simulated"], true);
  EXPECT_EQ(c.doc["metadata"]["complete"], true);
  EXPECT_EQ(e.result.stats.events, c.doc["traceEvents"].size());
}

TEST(ChromeTrace, LaunchCallFlowsToItsKernel) {
  const auto doc = check_trace_events(export_bytes(flow_and_nvtx_trace().bytes).text).doc;
  const auto launch = events_named(doc, "cudaLaunchKernel", "X");
  ASSERT_EQ(launch.size(), 1u);
  EXPECT_EQ(launch[0]["pid"], 777);
  EXPECT_EQ(launch[0]["tid"], 11);
  EXPECT_DOUBLE_EQ(launch[0]["ts"].get<double>(), 1.0);  // µs from the process start
  EXPECT_DOUBLE_EQ(launch[0]["dur"].get<double>(), 0.1);
  EXPECT_EQ(launch[0]["cat"], "cuda.launch");
  EXPECT_EQ(launch[0]["args"]["kernel"], "gemm<float>");
  EXPECT_EQ(launch[0]["args"]["grid"], "8x1x1");
  const auto flows = events_named(doc, "launch");
  ASSERT_EQ(flows.size(), 2u);
  const auto& s = flows[0]["ph"] == "s" ? flows[0] : flows[1];
  const auto& f = flows[0]["ph"] == "f" ? flows[0] : flows[1];
  EXPECT_EQ(s["id"], f["id"]);
  EXPECT_EQ(s["tid"], 11);
  EXPECT_EQ(f["bp"], "e");
  const auto kernels = events_named(doc, "gemm<float>", "X");
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(f["pid"], kernels[0]["pid"]);
  EXPECT_EQ(f["tid"], kernels[0]["tid"]);
  EXPECT_EQ(f["ts"], kernels[0]["ts"]);
  // The skewed kernel overlapping the first went to a second lane.
  EXPECT_NE(kernels[0]["tid"], kernels[1]["tid"]);
  const auto gpu_name = events_named(doc, "process_name", "M");
  bool named = false;
  for (const auto& n : gpu_name) named |= n["args"]["name"] == "GPU 0 simgpu H200 (simulated)" && n["pid"] == kernels[0]["pid"];
  EXPECT_TRUE(named);
}

TEST(ChromeTrace, NvtxPushPopNestOnTheirRowAndStartEndIsAsync) {
  const auto doc = check_trace_events(export_bytes(flow_and_nvtx_trace().bytes).text).doc;
  const auto outer = events_named(doc, "outer", "X");
  const auto inner = events_named(doc, "inner", "X");
  ASSERT_EQ(outer.size(), 1u);
  ASSERT_EQ(inner.size(), 2u);  // one per domain
  EXPECT_DOUBLE_EQ(outer[0]["ts"].get<double>(), 0.9);
  EXPECT_DOUBLE_EQ(outer[0]["dur"].get<double>(), 2.1);
  const auto& same_row = inner[0]["tid"] == outer[0]["tid"] ? inner[0] : inner[1];
  const auto& other_row = inner[0]["tid"] == outer[0]["tid"] ? inner[1] : inner[0];
  EXPECT_DOUBLE_EQ(same_row["dur"].get<double>(), 0.2);
  EXPECT_EQ(same_row["args"]["depth"], 1);
  EXPECT_NE(outer[0]["tid"], 11) << "NVTX rows are not the thread's CUDA row";
  EXPECT_EQ(other_row["args"]["domain"], "my.domain");
  EXPECT_EQ(other_row["args"]["unterminated"], true);
  const auto async = events_named(doc, "async \"phase\"\n\xEF\xBF\xBD");
  ASSERT_EQ(async.size(), 2u) << "invalid UTF-8 replaced, quote and newline escaped";
  EXPECT_EQ(async[0]["ph"], "b");
  EXPECT_EQ(async[1]["ph"], "e");
  EXPECT_DOUBLE_EQ(async[1]["ts"].get<double>(), 2.0);
  EXPECT_EQ(doc["metadata"]["unmatched_nvtx_ends"], 1);
  EXPECT_EQ(doc["metadata"]["unterminated_nvtx_ranges"], 1);
  bool worker = false;
  for (const auto& n : events_named(doc, "thread_name", "M")) worker |= n["tid"] == 12 && n["args"]["name"] == "worker";
  EXPECT_TRUE(worker);
}

TEST(ChromeTrace, CountersCaptureWindowsAndLiveMemory) {
  const auto doc = check_trace_events(export_bytes(flow_and_nvtx_trace().bytes).text).doc;
  const auto util = events_named(doc, "utilization %", "C");
  ASSERT_EQ(util.size(), 1u);
  EXPECT_EQ(util[0]["args"]["gpu"], 40);
  EXPECT_EQ(events_named(doc, "PCIe (KB/s)", "C").at(0)["args"]["rx"], 200);
  EXPECT_EQ(events_named(doc, "memory used (bytes)", "C").at(0)["args"]["used"], 1 << 30);
  EXPECT_EQ(events_named(doc, "device memory (live)", "C").at(0)["args"]["bytes"], 1 << 20);
  const auto windows = events_named(doc, "capture window", "X");
  ASSERT_EQ(windows.size(), 1u);
  EXPECT_DOUBLE_EQ(windows[0]["dur"].get<double>(), 5.0);
  EXPECT_EQ(events_named(doc, "cudaMalloc", "X").at(0)["args"]["bytes"], 1 << 20);
}

// Sampled device tracing's windows: a track of their own, so the timeline
// shows where device records could be (and where their absence means nothing).
TEST(ChromeTrace, SampledDeviceWindowsAreATrack) {
  TraceBytes t;
  auto& b = t.chunk();
  b.add_strings({{1, "20 ms every 60 ms"}});
  b.add(fb::Marker(1000, 500, 0, 1, 0, 0, fb::MarkerKind::DeviceWindow, 0, 0));
  b.add(fb::Marker(5000, 500, 0, 1, 0, 0, fb::MarkerKind::DeviceWindow, 0, 0));
  t.frame();
  const Exported e = export_bytes(t.bytes);
  const TraceEventCheck c = check_trace_events(e.text);
  ASSERT_TRUE(c.ok()) << c.first_errors();
  const auto windows = events_named(c.doc, "device records collected", "X");
  ASSERT_EQ(windows.size(), 2u);
  EXPECT_DOUBLE_EQ(windows[1]["ts"].get<double>() - windows[0]["ts"].get<double>(), 4.0);
  EXPECT_DOUBLE_EQ(windows[0]["dur"].get<double>(), 0.5);
}

TEST(ChromeTrace, PartialOverlapsOnAThreadAreClampedOrMadeInstants) {
  TraceBytes t;
  auto& b = t.chunk();
  b.add_strings({{1, "a"}, {2, "b"}, {3, "c"}});
  b.add(fb::ApiCall(1000, 100, 1, 0, 5, 0, 0, 1, 0, 0, 0, 0));  // [1000, 1100)
  b.add(fb::ApiCall(1050, 100, 2, 0, 5, 0, 0, 2, 0, 0, 0, 0));  // [1050, 1150): partial overlap
  b.add(fb::ApiCall(900, 50, 3, 0, 5, 0, 0, 3, 0, 0, 0, 0));    // ended before both: out of order
  t.frame();
  const Exported e = export_bytes(t.bytes);
  const TraceEventCheck c = check_trace_events(e.text);
  ASSERT_TRUE(c.ok()) << c.first_errors();
  EXPECT_EQ(e.result.stats.clamped, 1u);
  EXPECT_EQ(e.result.stats.unplaced, 1u);
  EXPECT_EQ(events_named(c.doc, "c", "i").size(), 1u);
  EXPECT_EQ(events_named(c.doc, "b", "X").at(0)["args"]["recorded_duration_ns"], 100);
}

TEST(ChromeTrace, TruncatedTraceExportsWhatPrecedesTheDamage) {
  TraceBytes t = flow_and_nvtx_trace();
  t.bytes.resize(t.frame_offsets[1] + 30);  // inside the second frame
  const Exported e = export_bytes(t.bytes);
  const TraceEventCheck c = check_trace_events(e.text);
  ASSERT_TRUE(c.ok()) << c.first_errors();
  EXPECT_EQ(c.doc["metadata"]["complete"], false);
  EXPECT_EQ(events_named(c.doc, "cudaLaunchKernel", "X").size(), 1u);
  // The start/end range's end was in the lost frame: closed at the end, flagged.
  const auto async = events_named(c.doc, "async \"phase\"\n\xEF\xBF\xBD", "b");
  ASSERT_EQ(async.size(), 1u);
  EXPECT_EQ(async[0]["args"]["unterminated"], true);
  bool truncated = false;
  for (const auto& p : e.result.summary.problems) truncated |= p.kind == reader::ProblemKind::Truncated;
  EXPECT_TRUE(truncated);
}

TEST(ChromeTrace, SampleTraceOfManyChunksStaysValid) {
  const SampleTrace t = make_sample_trace(4, 3000);
  const Exported e = export_bytes(t.bytes);
  const TraceEventCheck c = check_trace_events(e.text);
  ASSERT_TRUE(c.ok()) << c.first_errors();
  EXPECT_EQ(e.result.stats.records, t.records);
  // One span per API call; calls of one thread that overlap (the sample's
  // random durations) are clamped or, when out of order, instants.
  EXPECT_EQ(c.by_phase.at("X") + (c.by_phase.count("i") ? c.by_phase.at("i") : 0), 4u * 3000u);
}

// Encoding on a second thread (sink_pipeline.h) must not change a byte:
// batches of 4096 events, so the sample trace crosses many hand-overs.
TEST(ExportThreads, TwoThreadsWriteWhatOneWrites) {
  TraceBytes truncated = flow_and_nvtx_trace();
  truncated.bytes.resize(truncated.frame_offsets[1] + 30);
  const std::vector<std::vector<uint8_t>> traces = {make_sample_trace(6, 3000).bytes, flow_and_nvtx_trace().bytes,
                                                    truncated.bytes};
  for (const ExportFunction write : {write_chrome_trace, write_perfetto_trace}) {
    for (const auto& bytes : traces) {
      ExportOptions one, two;
      one.threads = 1;
      two.threads = 2;
      const Exported a = export_bytes_with(bytes, write, one);
      const Exported b = export_bytes_with(bytes, write, two);
      ASSERT_FALSE(a.text.empty());
      EXPECT_TRUE(a.text == b.text) << "outputs differ, sizes " << a.text.size() << " and " << b.text.size();
      EXPECT_EQ(a.result.stats.events, b.result.stats.events);
      EXPECT_EQ(a.result.stats.records, b.result.stats.records);
      EXPECT_EQ(a.result.summary.problems.size(), b.result.summary.problems.size());
      if (&bytes == &traces.front()) EXPECT_GT(a.result.stats.events, 3 * PipelinedSink::kBatchEvents);
    }
  }
}

TEST(JsonEscape, EscapesAndReplacesInvalidUtf8) {
  EXPECT_EQ(json_string("a\"b\\c\n\x01"), "\"a\\\"b\\\\c\\n\\u0001\"");
  EXPECT_EQ(json_string("caf\xC3\xA9"), "\"caf\xC3\xA9\"");
  EXPECT_EQ(json_string("\xC3"), "\"\xEF\xBF\xBD\"");            // cut short
  EXPECT_EQ(json_string("\xED\xA0\x80"), "\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"");  // a surrogate
  EXPECT_EQ(json_string("\xF0\x9F\x98\x80"), "\"\xF0\x9F\x98\x80\"");
  EXPECT_NO_THROW({ const auto j = nlohmann::json::parse(json_string(std::string("\x00\xff\x80 x", 5))); EXPECT_TRUE(j.is_string()); });
}

// RFC 4180 fields, read back.
std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows(1, std::vector<std::string>(1));
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') rows.back().back() += '"', ++i;
      else if (c == '"') quoted = false;
      else rows.back().back() += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      rows.back().emplace_back();
    } else if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {
      rows.emplace_back(1);
      ++i;
    } else {
      rows.back().back() += c;
    }
  }
  if (rows.back().size() == 1 && rows.back()[0].empty()) rows.pop_back();
  return rows;
}

TEST(Csv, OneRowPerRecordWithQuoting) {
  const TraceBytes t = flow_and_nvtx_trace();
  const Exported e = export_bytes(t.bytes, true);
  const auto rows = parse_csv(e.text);
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows[0][0], "time_ns");
  EXPECT_EQ(rows[0].size(), 16u);
  EXPECT_EQ(rows[0].back(), "calls");
  EXPECT_EQ(rows.size() - 1, e.result.summary.counts.total());
  for (const auto& r : rows) EXPECT_EQ(r.size(), 16u);
  bool launch = false, quoted = false, typed_tid = false;
  for (const auto& r : rows) {
    launch |= r[4] == "api_call" && r[6] == "cudaLaunchKernel" && r[2] == "777" && r[3] == "11" && r[15] == "1";
    quoted |= r[4] == "marker" && r[6] == "async \"phase\"\n\xEF\xBF\xBD";
    typed_tid |= r[4] == "kernel" && r[5] == "host" && r[3] == "11";
  }
  EXPECT_TRUE(launch);
  EXPECT_TRUE(quoted);
  EXPECT_TRUE(typed_tid) << "a typed host record takes its call's thread";
}

// Which viewer a written export is too large for: chrome://tracing past
// ~256 MB of JSON, ui.perfetto.dev past ~512 MB of either format, a
// spreadsheet past 1,048,576 CSV rows; nothing below those.
TEST(ViewerLimits, EachFormatIsJudgedByItsOwnViewers) {
  constexpr uint64_t MB = uint64_t{1} << 20;
  using exporter::too_large_for_viewer;
  EXPECT_EQ(too_large_for_viewer("chrome", 200 * MB, 1'000'000), "");
  const std::string chrome = too_large_for_viewer("chrome", 300 * MB, 1'500'000);
  EXPECT_EQ(chrome.rfind("300 MB: more than chrome://tracing loads", 0), 0u) << chrome;
  EXPECT_NE(chrome.find("ui.perfetto.dev"), std::string::npos) << chrome;
  for (const char* format : {"chrome", "perfetto"}) {
    const std::string big = too_large_for_viewer(format, 600 * MB, 3'000'000);
    EXPECT_EQ(big.rfind("600 MB: more than ui.perfetto.dev opens in the browser", 0), 0u) << big;
    EXPECT_NE(big.find("trace_processor --httpd"), std::string::npos) << big;
  }
  EXPECT_NE(too_large_for_viewer("chrome", 600 * MB, 3'000'000).find("--format perfetto"), std::string::npos);
  EXPECT_EQ(too_large_for_viewer("perfetto", 600 * MB, 3'000'000).find("--format perfetto"), std::string::npos);
  EXPECT_EQ(too_large_for_viewer("perfetto", 300 * MB, 1'500'000), "");  // no chrome://tracing there
  EXPECT_EQ(too_large_for_viewer("csv", 900 * MB, 1'048'576), "");
  const std::string csv = too_large_for_viewer("csv", 10 * MB, 1'048'577);
  EXPECT_EQ(csv.rfind("1048577 rows: more than a spreadsheet holds", 0), 0u) << csv;
}

}  // namespace
}  // namespace gpuscope::test
