// The Perfetto protobuf export, parsed back with the protobuf library and
// imported as trace_processor would (tests/support/perfetto_read.h): the
// tracks, slices, arguments, counters and flows of hand-built traces, and
// the same timeline, event for event, as the Chrome JSON export of the
// same trace.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include <nlohmann/json.hpp>

#include "../support/export_traces.h"
#include "../support/exported.h"
#include "../support/perfetto_read.h"
#include "../support/sample_trace.h"
#include "chrome_trace.h"

namespace gpuscope::test {
namespace {

constexpr uint64_t kIdMask = (uint64_t{1} << 53) - 1;  // the JSON's flow ids

PfTrace perfetto_of(const std::vector<uint8_t>& bytes, Exported* e = nullptr) {
  Exported local = export_bytes_with(bytes, exporter::write_perfetto_trace);
  PfTrace t = read_perfetto(local.text);
  if (e != nullptr) *e = std::move(local);
  return t;
}

std::string args_text(const std::map<std::string, std::string>& args) {
  std::string s;
  for (const auto& [k, v] : args) s += k + "=" + v + ";";
  return s;
}

std::string json_value_text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float()) return fmt::format("{}", v.get<double>());
  return v.dump();
}

// Both exports reduced to the same lines: one per slice, instant, async
// range, counter value, flow end and track name, sorted.
std::vector<std::string> timeline_of_json(const nlohmann::json& doc) {
  const uint64_t origin = doc["metadata"]["origin_monotonic_ns"];
  const auto ns = [&](const nlohmann::json& us) { return origin + std::llround(us.get<double>() * 1000); };
  std::vector<std::string> out;
  std::map<std::pair<int64_t, int64_t>, std::string> names;
  std::map<uint64_t, nlohmann::json> async_begins;
  for (const auto& e : doc["traceEvents"]) {
    const std::string ph = e["ph"];
    const int64_t pid = e["pid"], tid = e["tid"];
    std::map<std::string, std::string> args;
    const nlohmann::json event_args = e.value("args", nlohmann::json::object());
    for (const auto& [k, v] : event_args.items()) args[k] = json_value_text(v);
    const std::string where = fmt::format("{}/{} {} [{}]", pid, tid, e.value("name", ""), e.value("cat", ""));
    if (ph == "X") out.push_back(fmt::format("slice {} {}..{} {}", where, ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]) - origin, args_text(args)));
    if (ph == "i") out.push_back(fmt::format("instant {} {} {}", where, ns(e["ts"]), args_text(args)));
    if (ph == "b") async_begins[e["id"]] = e;
    if (ph == "e") {
      const auto& b = async_begins.at(e["id"]);
      std::map<std::string, std::string> begin_args;
      for (const auto& [k, v] : b["args"].items()) begin_args[k] = json_value_text(v);
      out.push_back(fmt::format("async {} {} [{}] {}..{} {}", pid, e["name"].get<std::string>(), e["cat"].get<std::string>(),
                                ns(b["ts"]), ns(e["ts"]), args_text(begin_args)));
    }
    if (ph == "C")
      for (const auto& [k, v] : e["args"].items())
        out.push_back(fmt::format("counter {} {} {} {} {}", pid, e["name"].get<std::string>(), k, ns(e["ts"]), v.get<double>()));
    if (ph == "s") out.push_back(fmt::format("flow_out {}/{} {}", pid, tid, e["id"].get<uint64_t>()));
    if (ph == "f") out.push_back(fmt::format("flow_in {}/{} {} {}", pid, tid, ns(e["ts"]), e["id"].get<uint64_t>()));
    if (ph == "M") names[{pid, e["name"] == "thread_name" ? tid : -1}] = e["args"]["name"];
  }
  for (const auto& [key, name] : names) out.push_back(fmt::format("named {}/{} {}", key.first, key.second, name));
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> timeline_of_perfetto(const PfTrace& t) {
  std::vector<std::string> out;
  for (const PfSlice& s : t.slices) {
    const PfTrack& track = t.tracks.at(s.track);
    const std::string where = fmt::format("{}/{} {} [{}]", track.pid, track.tid, s.name, s.category);
    if (track.tid < 0)
      out.push_back(fmt::format("async {} {} [{}] {}..{} {}", t.pid_of(s.track), s.name, s.category, s.start, s.end,
                                args_text(s.args)));
    else if (s.instant) out.push_back(fmt::format("instant {} {} {}", where, s.start, args_text(s.args)));
    else out.push_back(fmt::format("slice {} {}..{} {}", where, s.start, s.end, args_text(s.args)));
    for (uint64_t id : s.flows_out) out.push_back(fmt::format("flow_out {}/{} {}", track.pid, track.tid, id & kIdMask));
    for (uint64_t id : s.flows_in)
      out.push_back(fmt::format("flow_in {}/{} {} {}", track.pid, track.tid, s.start, id & kIdMask));
  }
  for (const PfCounter& c : t.counters) {
    const std::string& name = t.tracks.at(c.track).name;  // "<counter> <series>"
    const size_t space = name.rfind(' ');
    out.push_back(fmt::format("counter {} {} {} {} {}", t.pid_of(c.track), name.substr(0, space), name.substr(space + 1),
                              c.ts, c.value));
  }
  for (const auto& [uuid, track] : t.tracks)
    if (!track.name.empty() && !track.counter && track.pid >= 0)
      out.push_back(fmt::format("named {}/{} {}", track.pid, track.tid, track.name));
  std::sort(out.begin(), out.end());
  return out;
}

void expect_same_timeline(const std::vector<uint8_t>& bytes) {
  Exported proto;
  const PfTrace t = perfetto_of(bytes, &proto);
  ASSERT_TRUE(t.ok()) << t.errors.front() << " (" << t.errors.size() << " errors)";
  const Exported json = export_bytes(bytes);
  const auto from_json = timeline_of_json(nlohmann::json::parse(json.text));
  const auto from_proto = timeline_of_perfetto(t);
  std::vector<std::string> only_json, only_proto;
  std::set_difference(from_json.begin(), from_json.end(), from_proto.begin(), from_proto.end(), std::back_inserter(only_json));
  std::set_difference(from_proto.begin(), from_proto.end(), from_json.begin(), from_json.end(), std::back_inserter(only_proto));
  EXPECT_TRUE(only_json.empty()) << only_json.size() << " only in the JSON, first: " << only_json.front();
  EXPECT_TRUE(only_proto.empty()) << only_proto.size() << " only in the protobuf, first: " << only_proto.front();
  EXPECT_GT(from_json.size(), 10u);
  EXPECT_EQ(proto.result.stats.records, json.result.stats.records);
  EXPECT_LT(proto.text.size(), json.text.size());
}

TEST(PerfettoTrace, SameTimelineAsTheJsonOnAHandBuiltTrace) { expect_same_timeline(flow_and_nvtx_trace().bytes); }

TEST(PerfettoTrace, SameTimelineAsTheJsonOnASampleOfManyChunks) {
  expect_same_timeline(make_sample_trace(4, 3000).bytes);
}

TEST(PerfettoTrace, SameTimelineAsTheJsonOnATruncatedTrace) {
  TraceBytes t = flow_and_nvtx_trace();
  t.bytes.resize(t.frame_offsets[1] + 30);  // inside the second frame: ranges closed at the end
  expect_same_timeline(t.bytes);
}

const PfSlice* find_slice(const PfTrace& t, const std::string& name, size_t nth = 0) {
  for (const PfSlice& s : t.slices)
    if (s.name == name && nth-- == 0) return &s;
  return nullptr;
}

TEST(PerfettoTrace, LaunchFlowsToItsKernelOnItsStreamTrack) {
  const PfTrace t = perfetto_of(flow_and_nvtx_trace().bytes);
  ASSERT_TRUE(t.ok()) << t.errors.front();
  const PfSlice* launch = find_slice(t, "cudaLaunchKernel");
  ASSERT_NE(launch, nullptr);
  EXPECT_EQ(launch->start, kT0 + 1000) << "absolute CLOCK_MONOTONIC ns";
  EXPECT_EQ(launch->end, kT0 + 1100);
  EXPECT_EQ(launch->category, "cuda.launch");
  EXPECT_EQ(launch->args.at("kernel"), "gemm<float>");
  EXPECT_EQ(launch->args.at("grid"), "8x1x1");
  EXPECT_EQ(launch->args.at("correlation"), std::to_string(kCorr));
  EXPECT_EQ(launch->flows_out, std::vector<uint64_t>{kCorr});
  const PfTrack& host = t.tracks.at(launch->track);
  EXPECT_EQ(host.pid, 777);
  EXPECT_EQ(host.tid, 11);
  const PfSlice* driver = find_slice(t, "cuLaunchKernel");
  ASSERT_NE(driver, nullptr);
  EXPECT_EQ(driver->track, launch->track) << "the driver call nests inside the runtime call";

  const PfSlice* kernel = find_slice(t, "gemm<float>");
  const PfSlice* skewed = find_slice(t, "gemm<float>", 1);
  ASSERT_NE(kernel, nullptr);
  ASSERT_NE(skewed, nullptr);
  EXPECT_EQ(kernel->flows_in, std::vector<uint64_t>{kCorr});
  EXPECT_EQ(kernel->start, kT0 + 1200);
  const PfTrack& stream = t.tracks.at(kernel->track);
  EXPECT_EQ(stream.name, "stream 0x70");
  EXPECT_EQ(t.tracks.at(skewed->track).name, "stream 0x70 (overlap 1)");
  bool gpu_named = false;
  for (const auto& [uuid, track] : t.tracks)
    gpu_named |= track.tid < 0 && track.pid == stream.pid && track.name == "GPU 0 simgpu H200 (simulated)";
  EXPECT_TRUE(gpu_named);
}

TEST(PerfettoTrace, NvtxRangesCountersAndNames) {
  const PfTrace t = perfetto_of(flow_and_nvtx_trace().bytes);
  ASSERT_TRUE(t.ok()) << t.errors.front();
  const PfSlice* outer = find_slice(t, "outer");
  ASSERT_NE(outer, nullptr);
  EXPECT_EQ(outer->start, kT0 + 900);
  EXPECT_EQ(outer->end, kT0 + 3000);
  EXPECT_EQ(t.tracks.at(outer->track).name, "NVTX (thread 11)");
  const PfSlice* async = find_slice(t, "async \"phase\"\n\xEF\xBF\xBD");
  ASSERT_NE(async, nullptr) << "the start/end range, its invalid UTF-8 replaced";
  EXPECT_EQ(async->end, kT0 + 2000);
  EXPECT_EQ(async->args.at("range_id"), "42");
  std::map<std::string, double> counters;
  for (const PfCounter& c : t.counters) counters[t.tracks.at(c.track).name] = c.value;
  EXPECT_EQ(counters.at("utilization % gpu"), 40);
  EXPECT_EQ(counters.at("PCIe (KB/s) rx"), 200);
  EXPECT_EQ(counters.at("memory used (bytes) used"), 1 << 30);
  EXPECT_EQ(counters.at("device memory (live) bytes"), 1 << 20);
  bool worker = false, process = false;
  for (const auto& [uuid, track] : t.tracks) {
    worker |= track.tid == 12 && track.name == "worker";
    process |= track.pid == 777 && track.tid < 0 && track.name == "train (simulated GPU: simgpu)";
  }
  EXPECT_TRUE(worker);
  EXPECT_TRUE(process);
}

TEST(PerfettoTrace, AnEmptyTraceIsAValidStream) {
  TraceBytes t;
  t.frame();
  const PfTrace p = perfetto_of(t.bytes);
  EXPECT_TRUE(p.ok()) << p.errors.front();
  EXPECT_GE(p.packets, 1u);
  EXPECT_TRUE(p.slices.empty());
}

}  // namespace
}  // namespace gpuscope::test
