// gpuscope export on traces of the samples run on simgpu: the JSON is
// strict, every event has the fields its phase needs, spans nest on every
// track; the Perfetto protobuf parses back with as many slices and flows;
// and the CSV has one row per record `gpuscope info` counts. Plus the
// failure modes: not a trace, a truncated trace, an unwritable output.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "../support/perfetto_read.h"
#include "../support/trace_event_check.h"
#include "e2e_support.h"

namespace gpuscope::test {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

ProcessResult gpuscope(std::vector<std::string> args) {
  args.insert(args.begin(), gpuscope_exe());
  return run(args, clean_env());
}

// A sample traced on simgpu into `dir`; the trace's path, "" on failure.
std::string trace_sample(const TempDir& dir, const std::vector<std::string>& sample,
                         const std::vector<std::string>& run_options = {}, std::vector<std::string> env = {}) {
  const std::string path = dir.file(sample.front() + ".gpuscope");
  std::vector<std::string> argv = {gpuscope_exe(), "run", "-q", "-o", path};
  argv.insert(argv.end(), run_options.begin(), run_options.end());
  argv.push_back("--");
  argv.push_back(bin(sample.front()));
  argv.insert(argv.end(), sample.begin() + 1, sample.end());
  env.push_back("LD_LIBRARY_PATH=" + std::string(GPUSCOPE_SIMGPU_LIB_DIR));
  const auto r = run(argv, environment_with(env,
                                            {"LD_PRELOAD", "GPUSCOPE_OUTPUT", "SIMGPU_NODE", "CUDA_INJECTION64_PATH"}));
  EXPECT_EQ(r.exit_code(), 0) << r.err;
  return std::filesystem::exists(path) ? path : "";
}

// The event count `gpuscope info` reports.
uint64_t info_event_count(const std::string& trace) {
  const auto r = gpuscope({"info", trace});
  std::smatch m;
  if (!std::regex_search(r.out, m, std::regex(R"(events:\s+(\d+) total)"))) return UINT64_MAX;
  return std::stoull(m[1]);
}

size_t csv_records(const std::string& text) {
  size_t rows = 0;
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '"') quoted = !quoted;  // "" inside a field toggles twice
    else if (!quoted && text[i] == '\n') ++rows;
  }
  return rows;
}

struct Sample {
  std::vector<std::string> command;
  std::vector<std::string> run_options;
};

// Named in ctest by its command, not its bytes (which change with every build).
void PrintTo(const Sample& s, std::ostream* os) { *os << s.command.front(); }

class ExportSamples : public ::testing::TestWithParam<Sample> {};

// The protobuf export of `trace` parses back with a slice per JSON span,
// an instant per JSON instant and a flow per JSON flow start.
void expect_perfetto_matches(const TempDir& dir, const std::string& trace, const TraceEventCheck& json,
                             size_t json_bytes) {
  const std::string path = dir.file("out.pftrace");
  const auto r = gpuscope({"export", "--format", "perfetto", trace, "-o", path});
  ASSERT_EQ(r.exit_code(), 0) << r.err;
  EXPECT_NE(r.err.find("ui.perfetto.dev"), std::string::npos) << r.err;
  const std::string bytes = slurp(path);
  const PfTrace t = read_perfetto(bytes);
  ASSERT_TRUE(t.ok()) << t.errors.front();
  size_t spans = 0, instants = 0, flows = 0;
  for (const PfSlice& s : t.slices) {
    if (t.tracks.at(s.track).tid < 0) continue;  // NVTX start/end ranges: async in the JSON
    (s.instant ? instants : spans) += 1;
    flows += s.flows_out.size();
  }
  const auto count = [&](const char* ph) { return json.by_phase.count(ph) ? json.by_phase.at(ph) : 0u; };
  EXPECT_EQ(spans, count("X"));
  EXPECT_EQ(instants, count("i"));
  EXPECT_EQ(flows, count("s"));
  EXPECT_LT(bytes.size(), json_bytes);
}

TEST_P(ExportSamples, JsonIsStrictNestedPerfettoParsesAndCsvHasARowPerRecord) {
  if (!simgpu_built() || !std::filesystem::exists(bin(GetParam().command.front())))
    GTEST_SKIP() << "samples or simgpu not built";
  TempDir dir;
  const std::string trace = trace_sample(dir, GetParam().command, GetParam().run_options);
  ASSERT_FALSE(trace.empty());

  const std::string json_path = dir.file("out.json");
  const auto r = gpuscope({"export", "--format", "chrome", trace, "-o", json_path});
  ASSERT_EQ(r.exit_code(), 0) << r.err;
  EXPECT_NE(r.err.find("ui.perfetto.dev"), std::string::npos) << r.err;
  const std::string json = slurp(json_path);
  const TraceEventCheck c = check_trace_events(json);
  ASSERT_TRUE(c.ok()) << c.first_errors();
  EXPECT_EQ(c.doc["metadata"]["simulated"], true);
  EXPECT_EQ(c.doc["metadata"]["complete"], true);
  EXPECT_GT(c.by_phase.at("X"), 0u);
  bool labeled = false;
  for (const auto& e : c.doc["traceEvents"])
    labeled |= e["ph"] == "M" && e["name"] == "process_name" &&
               e["args"]["name"].get<std::string>().find("simulated") != std::string::npos;
  EXPECT_TRUE(labeled) << "the process says it ran on simgpu";

  const auto chrome = gpuscope({"export", trace});
  ASSERT_EQ(chrome.exit_code(), 0) << chrome.err;
  EXPECT_EQ(chrome.out, json) << "Chrome JSON is the default format, and stdout the default output";
  expect_perfetto_matches(dir, trace, c, json.size());

  const auto csv = gpuscope({"export", "--format", "csv", trace, "-o", "-"});
  ASSERT_EQ(csv.exit_code(), 0) << csv.err;
  EXPECT_EQ(csv.out.rfind("time_ns,duration_ns,pid,tid,kind,", 0), 0u);
  EXPECT_EQ(csv_records(csv.out) - 1, info_event_count(trace));
}

INSTANTIATE_TEST_SUITE_P(
    Samples, ExportSamples,
    ::testing::Values(Sample{{"pcie_bound", "--requests", "50"}, {}}, Sample{{"sync_bound", "--iters", "100"}, {}},
                      Sample{{"alloc_churn", "--iters", "30"}, {}}, Sample{{"driver_api", "--iters", "10"}, {}},
                      Sample{{"nvtx_phases"}, {}},
                      Sample{{"profiled_phases", "--rounds", "2", "--loads", "2", "--kernels", "3", "--clears", "2"},
                             {"--capture-range", "cudaProfilerApi", "--capture-range-end", "repeat"}}),
    [](const auto& info) { return info.param.command.front(); });

TEST(Export, NvtxSampleHasNvtxRowsAndCaptureWindowsTheirRow) {
  if (!simgpu_built() || !std::filesystem::exists(bin("nvtx_phases"))) GTEST_SKIP() << "samples or simgpu not built";
  TempDir dir;
  const std::string trace = trace_sample(dir, {"nvtx_phases"});
  const auto r = gpuscope({"export", trace});
  ASSERT_EQ(r.exit_code(), 0) << r.err;
  const TraceEventCheck c = check_trace_events(r.out);
  ASSERT_TRUE(c.ok()) << c.first_errors();
  uint64_t nvtx = 0;
  for (const auto& e : c.doc["traceEvents"]) nvtx += e.value("cat", "") == "nvtx" ? 1 : 0;
  EXPECT_GT(nvtx, 0u);
}

TEST(Export, NotATraceIsOneLineAndExit2) {
  TempDir dir;
  const std::string path = dir.file("junk.gpuscope");
  std::ofstream(path) << "this is not a trace";
  const auto r = gpuscope({"export", path, "-o", dir.file("out.json")});
  EXPECT_EQ(r.exit_code(), 2);
  EXPECT_EQ(count_lines_with(r.err, "gpuscope:"), 1) << r.err;
  EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("out.json"))) << "no output for an unreadable input";
  EXPECT_EQ(gpuscope({"export", dir.file("missing.gpuscope")}).exit_code(), 2);
}

TEST(Export, TruncatedTraceExportsWhatWasReadAndSaysSo) {
  if (!simgpu_built()) GTEST_SKIP() << "simgpu not built";
  TempDir dir;
  // Frames every 5 ms, so that the trace has several; cut inside the last.
  const std::string trace = trace_sample(dir, {"sync_bound", "--iters", "2000"}, {}, {"GPUSCOPE_FLUSH_MS=5"});
  ASSERT_FALSE(trace.empty());
  const std::string bytes = slurp(trace);
  const size_t last_frame = bytes.rfind("GSFR");
  ASSERT_NE(last_frame, std::string::npos);
  ASSERT_GT(last_frame, 32u) << "one frame only";
  const std::string cut = dir.file("cut.gpuscope");
  std::ofstream(cut, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(last_frame + 30));
  const auto r = gpuscope({"export", cut, "-o", dir.file("cut.json")});
  ASSERT_EQ(r.exit_code(), 0) << r.err;
  EXPECT_NE(r.err.find("exported everything readable"), std::string::npos) << r.err;
  const TraceEventCheck c = check_trace_events(slurp(dir.file("cut.json")));
  ASSERT_TRUE(c.ok()) << c.first_errors();
  EXPECT_EQ(c.doc["metadata"]["complete"], false);
  EXPECT_GT(c.by_phase.count("X"), 0u);
}

TEST(Export, UnwritableOutputIsExit2) {
  if (!simgpu_built()) GTEST_SKIP() << "simgpu not built";
  TempDir dir;
  const std::string trace = trace_sample(dir, {"sync_bound", "--iters", "10"});
  const auto r = gpuscope({"export", trace, "-o", dir.file("no/such/dir/out.json")});
  EXPECT_EQ(r.exit_code(), 2);
  EXPECT_NE(r.err.find("cannot write"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace gpuscope::test
