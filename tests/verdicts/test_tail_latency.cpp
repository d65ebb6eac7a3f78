// Tail latency per request end to end (issue 24, first slice):
// samples/workloads/request_service.cu traced on simgpu and analyzed with
// --requests request. The quantiles equal a direct nearest-rank computation
// over the trace's own NVTX push/pop records (read here, not through the
// analyzer's range model); the service whose every tenth request copies a
// large pageable input gets the tail finding naming those copies and their
// call site, the healthy one none; the service next to a batch job on the
// same simulated GPU (one SIMGPU_SHARED_ID: shared engines) gets the batch
// job's process as its tail's cause. The Prometheus summary carries the same
// quantiles, and the tail's cause as a labeled gauge. Judged by shares and ratios only: the
// machine may be loaded. RUN_SERIAL, like the other verdict tests.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <future>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "../e2e/e2e_support.h"
#include "../support/trace_contents.h"

namespace gpuscope::test {
namespace {

using nlohmann::json;

// Every "request" range's duration, from the trace's push/pop markers.
std::vector<uint64_t> request_durations(const std::string& path) {
  const TraceContents t = read_trace_file(path);
  EXPECT_TRUE(t.error.empty()) << t.error;
  std::map<uint32_t, std::vector<std::pair<uint64_t, std::string>>> open;  // per thread: (start, message)
  std::vector<uint64_t> out;
  for (const fb::Marker& m : t.markers) {
    if (m.kind() == fb::MarkerKind::RangePush)
      open[m.tid()].push_back({m.start_ns(), m.name_id() ? t.summary.name_of(m.name_id()) : ""});
    if (m.kind() != fb::MarkerKind::RangePop || open[m.tid()].empty()) continue;
    const auto [start, message] = open[m.tid()].back();
    open[m.tid()].pop_back();
    if (message == "request") out.push_back(m.start_ns() - start);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Every cudaProfilerStart -> cudaProfilerStop window's duration, from the
// trace's outermost calls: start call's start to stop call's end.
std::vector<uint64_t> profiler_window_durations(const std::string& path) {
  const TraceContents t = read_trace_file(path);
  EXPECT_TRUE(t.error.empty()) << t.error;
  std::vector<std::pair<uint64_t, bool>> edges;  // (ns, start)
  for (const fb::ApiCall& c : t.api_calls) {
    if (c.depth() != 0) continue;
    const std::string name = t.summary.name_of(c.function_id());
    if (name == "cudaProfilerStart") edges.push_back({c.start_ns(), true});
    if (name == "cudaProfilerStop") edges.push_back({c.start_ns() + c.duration_ns(), false});
  }
  std::sort(edges.begin(), edges.end());
  std::vector<uint64_t> out;
  for (size_t i = 0; i + 1 < edges.size(); i += 2) {
    EXPECT_TRUE(edges[i].second && !edges[i + 1].second) << "window " << i / 2 << " is not start then stop";
    out.push_back(edges[i + 1].first - edges[i].first);
  }
  std::sort(out.begin(), out.end());
  return out;
}

double nearest_rank_s(const std::vector<uint64_t>& sorted, double q) {
  const size_t rank = static_cast<size_t>(std::ceil(q * sorted.size()));
  return sorted[std::max<size_t>(rank, 1) - 1] / 1e9;
}

class TailLatency : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!simgpu_built() || !std::filesystem::exists(bin("request_service")))
      GTEST_SKIP() << "simgpu or request_service is not built";
    if (!std::filesystem::exists(bin("batch_embed"))) GTEST_SKIP() << "batch_embed is not built";
  }

  // request_service traced with `args`; `run_args` go to gpuscope run.
  std::string trace(const std::vector<std::string>& args, const std::vector<std::string>& run_args = {},
                    const std::string& program = "request_service", const std::string& shared_id = "") {
    const std::string path = dir_.file(program + std::to_string(++n_) + ".gpuscope");
    std::vector<std::string> argv = {gpuscope_exe(), "run", "-q", "-o", path};
    argv.insert(argv.end(), run_args.begin(), run_args.end());
    argv.push_back("--");
    argv.push_back(bin(program));
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<std::string> env = {"LD_LIBRARY_PATH=" + std::string(GPUSCOPE_SIMGPU_LIB_DIR)};
    std::vector<std::string> unset = {"LD_PRELOAD", "GPUSCOPE_OUTPUT", "SIMGPU_NODE"};
    if (shared_id.empty()) unset.push_back("SIMGPU_SHARED_ID");
    else env.push_back("SIMGPU_SHARED_ID=" + shared_id);
    const auto ran = run(argv, environment_with(env, unset));
    EXPECT_EQ(ran.exit_code(), 0) << ran.err;
    return path;
  }

  // The service and the batch job side by side on one simulated GPU (the
  // batch job started first, its bursts spread over the service's run):
  // the two traces.
  std::pair<std::string, std::string> service_beside_batch(const std::vector<std::string>& service_args) {
    const std::string id = "gpuscope-cotenant-" + std::to_string(getpid()) + "-" + std::to_string(n_);
    auto batch = std::async(std::launch::async, [&] {
      return trace({"--bursts", "30", "--period-ms", "100"}, {}, "batch_embed", id);
    });
    const std::string service = trace(service_args, {}, "request_service", id);
    return {service, batch.get()};
  }

  static int pid_of(const std::string& path) {
    const TraceContents t = read_trace_file(path);
    return t.summary.process ? t.summary.process->pid : 0;
  }

  static json analyze(const std::string& path, const std::vector<std::string>& extra = {},
                      const std::string& requests = "request") {
    std::vector<std::string> argv = {gpuscope_exe(), "analyze", "--json", "--requests", requests, path};
    argv.insert(argv.end(), extra.begin(), extra.end());
    const auto r = run(argv);
    EXPECT_EQ(r.exit_code(), 0) << r.err;
    return json::parse(r.out, nullptr, false);
  }

  static const json* tail_finding(const json& j) {
    for (const auto& f : j["findings"])
      if (f["id"] == "requests.tail_cause") return &f;
    return nullptr;
  }

  static void expect_direct_quantiles(const std::string& path, const json& requests) {
    expect_quantiles_of(request_durations(path), requests);
  }

  static void expect_quantiles_of(const std::vector<uint64_t>& direct, const json& requests) {
    ASSERT_FALSE(direct.empty());
    ASSERT_EQ(requests["count"].get<size_t>(), direct.size());
    for (const auto& q : requests["quantiles"])
      EXPECT_DOUBLE_EQ(q["seconds"].get<double>(), nearest_rank_s(direct, q["quantile"].get<double>()))
          << "p" << q["quantile"].get<double>() * 100;
    EXPECT_DOUBLE_EQ(requests["max_s"].get<double>(), direct.back() / 1e9);
    EXPECT_DOUBLE_EQ(requests["slowest"][0]["seconds"].get<double>(), direct.back() / 1e9);
  }

  // `analyze --format prometheus --requests request`: sample lines by name
  // with their labels ("name{labels}" -> value).
  static std::map<std::string, double> prometheus(const std::string& path) {
    const auto r = run({gpuscope_exe(), "analyze", "--format", "prometheus", path, "--requests", "request"});
    EXPECT_EQ(r.exit_code(), 0) << r.err;
    std::map<std::string, double> out;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
      if (line.empty() || line[0] == '#') continue;
      const size_t space = line.rfind(' ');
      out[line.substr(0, space)] = std::stod(line.substr(space + 1));
    }
    EXPECT_NE(r.out.find("# TYPE gpuscope_request_latency_seconds summary\n"), std::string::npos) << r.out;
    return out;
  }

  // The summary equals the direct computation; returns the tail-cause
  // samples (their label sets, after the base labels).
  static std::vector<std::string> expect_direct_summary(const std::string& path) {
    const std::vector<uint64_t> direct = request_durations(path);
    const auto samples = prometheus(path);
    std::map<std::string, double> quantiles;
    std::vector<std::string> causes;
    double sum = -1, count = -1;
    for (const auto& [name, value] : samples) {
      const size_t q = name.find("quantile=\"");
      if (name.starts_with("gpuscope_request_latency_seconds{") && q != std::string::npos)
        quantiles[name.substr(q + 10, name.find('"', q + 10) - q - 10)] = value;
      if (name.starts_with("gpuscope_request_latency_seconds_sum{")) sum = value;
      if (name.starts_with("gpuscope_request_latency_seconds_count{")) count = value;
      if (name.starts_with("gpuscope_request_tail_cause{")) causes.push_back(name.substr(name.find("request=")));
    }
    EXPECT_EQ(quantiles.size(), 5u);
    for (const auto& [q, seconds] : quantiles) EXPECT_DOUBLE_EQ(seconds, nearest_rank_s(direct, std::stod(q))) << q;
    EXPECT_EQ(count, static_cast<double>(direct.size()));
    EXPECT_DOUBLE_EQ(sum, std::accumulate(direct.begin(), direct.end(), uint64_t{0}) / 1e9);
    return causes;
  }

  TempDir dir_;
  int n_ = 0;
};

TEST_F(TailLatency, PageableLargeInputsAreTheTailsCauseWithTheirCallSite) {
  const std::string path = trace({"--requests", "120", "--large-every", "10"});
  const json j = analyze(path);
  ASSERT_FALSE(j.is_discarded());
  const json& r = j["requests"];
  EXPECT_EQ(r["count"], 120);
  expect_direct_quantiles(path, r);
  EXPECT_EQ(r["tail"]["requests"], 6);  // above p95: 120 - ceil(0.95 * 120)
  EXPECT_EQ(r["tail_cause"]["part"], "copy_to_device_pageable") << r.dump(2);
  EXPECT_TRUE(r["other_threads_cause"].is_null()) << r.dump(2);  // one thread
  EXPECT_EQ(r["tail_cause"]["differs"], true);
  // The tail copied the 64 MiB inputs (most of its requests did: the first
  // request, which starts the GPU, may be among the slowest), the median
  // band only its 128 KiB.
  EXPECT_GE(r["tail"]["copied_bytes"].get<double>(), 10 * r["median"]["copied_bytes"].get<double>()) << r.dump(2);
  EXPECT_LT(r["median"]["copied_bytes"].get<double>(), 1.0 * (1 << 20));
  const json* f = tail_finding(j);
  ASSERT_NE(f, nullptr) << j["findings"].dump(2);
  EXPECT_EQ((*f)["class"], "pcie_bound");
  bool site = false;
  for (const auto& s : (*f)["call_sites"])
    for (const auto& frame : s["frames"])
      site |= s["function"] == "cudaMemcpy" && frame["file"].get<std::string>().ends_with("request_service.cu");
  EXPECT_TRUE(site) << (*f)["call_sites"].dump(2);
  const auto text = run({gpuscope_exe(), "analyze", path, "--requests", "request"});
  EXPECT_NE(text.out.find("REQUESTS \"request\" (120 request(s)"), std::string::npos) << text.out;
  const std::vector<std::string> causes = expect_direct_summary(path);
  ASSERT_EQ(causes.size(), 1u);
  EXPECT_EQ(causes[0], "request=\"request\",part=\"copy_to_device_pageable\",class=\"pcie_bound\","
                       "differs_from_median=\"true\"}");
  EXPECT_NE(text.out.find("the tail's cause differs from the median's: host->device copies from pageable memory"),
            std::string::npos)
      << text.out;
}

TEST_F(TailLatency, AHealthyServiceHasNoTailFinding) {
  const std::string path = trace({"--requests", "120", "--healthy"});
  const json j = analyze(path);
  ASSERT_FALSE(j.is_discarded());
  expect_direct_quantiles(path, j["requests"]);
  EXPECT_TRUE(j["requests"]["thin_evidence"].is_null());
  EXPECT_EQ(tail_finding(j), nullptr) << j["requests"].dump(2);
  for (const std::string& cause : expect_direct_summary(path))
    EXPECT_EQ(cause.find("differs_from_median=\"true\""), std::string::npos) << cause;
  // --tail moves the tail's lower bound: above p90, 12 of 120.
  EXPECT_EQ(analyze(path, {"--tail", "90"})["requests"]["tail"]["requests"], 12);
}

TEST_F(TailLatency, TooFewRequestsAreNotJudged) {
  const std::string path = trace({"--requests", "10", "--large-every", "2"});
  const json j = analyze(path);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["requests"]["count"], 10);
  EXPECT_NE(j["requests"]["thin_evidence"].get<std::string>().find("only 10 request(s)"), std::string::npos);
  EXPECT_TRUE(j["requests"]["tail_cause"].is_null());
  EXPECT_EQ(tail_finding(j), nullptr);
  // A name no range has is an error naming the option and the trace.
  const auto r = run({gpuscope_exe(), "analyze", path, "--requests", "no_such_range"});
  EXPECT_EQ(r.exit_code(), 2);
  EXPECT_NE(r.err.find("--requests no_such_range: " + path + " has no NVTX range with that message"),
            std::string::npos)
      << r.err;
  const std::string source = GPUSCOPE_SOURCE_DIR;
  const auto schema = run({"python3", source + "/tests/verdicts/check_json_schema.py", source + "/docs/analysis.schema.json",
                           gpuscope_exe(), "--requests", "request", path, trace({"--requests", "60"})});
  EXPECT_EQ(schema.exit_code(), 0) << schema.out << schema.err;
}

// Every tenth request arrives while a helper thread churns device memory:
// the request's own thread only waits longer in its synchronization (the
// median's own largest part), so the cause is the other thread's freeing,
// named with its call site; the other requests see none of it.
TEST_F(TailLatency, AnAllocatorStormOnAHelperThreadIsTheTailsCause) {
  const std::string path = trace({"--requests", "120", "--storm-every", "10"});
  const json j = analyze(path);
  ASSERT_FALSE(j.is_discarded());
  const json& r = j["requests"];
  expect_direct_quantiles(path, r);
  ASSERT_TRUE(r["other_threads_cause"].is_object()) << r.dump(2);
  EXPECT_EQ(r["other_threads_cause"]["part"], "free") << r.dump(2);
  EXPECT_LE(r["other_threads_cause"]["median_share"].get<double>(), 0.2);
  EXPECT_EQ(r["median"]["other_threads_busy_requests"].value("free", 0), 0) << r["median"].dump(2);
  const json* f = tail_finding(j);
  ASSERT_NE(f, nullptr) << j["findings"].dump(2);
  EXPECT_EQ((*f)["class"], "memory_bound");
  EXPECT_NE((*f)["title"].get<std::string>().find("another thread of the process is in freeing"), std::string::npos);
  bool helper_site = false;
  for (const auto& s : (*f)["call_sites"])
    for (const auto& frame : s["frames"])
      helper_site |= s["function"] == "cudaFree" && frame.value("function", "").find("churn") != std::string::npos;
  EXPECT_TRUE(helper_site) << (*f)["call_sites"].dump(2);
  // The Prometheus exposition carries it as a labeled gauge.
  const auto p = run({gpuscope_exe(), "analyze", "--format", "prometheus", path, "--requests", "request"});
  EXPECT_NE(p.out.find("gpuscope_request_tail_other_threads{"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("part=\"free\",class=\"memory_bound\"}"), std::string::npos) << p.out;
}

// A helper that holds the lock every request takes while it computes on
// the CPU: the requests that arrive meanwhile wait outside CUDA (not the
// median's own part: the finding), and the helper's CPU stack samples,
// inside those requests and not the band's, are the other threads' cause,
// with the helper's own code as a call site.
TEST_F(TailLatency, AHelperOnTheCpuHoldingTheRequestsLockIsInTheTail) {
  const std::string path = trace({"--requests", "120", "--refresh-every", "10"});
  if (read_trace_file(path).host_samples.empty()) GTEST_SKIP() << "no CPU stack samples here (perf events refused)";
  const json j = analyze(path);
  const json& r = j["requests"];
  expect_direct_quantiles(path, r);
  ASSERT_TRUE(r["tail_cause"].is_object()) << r.dump(2);
  EXPECT_EQ(r["tail_cause"]["part"], "outside_cuda");
  EXPECT_EQ(r["tail_cause"]["differs"], true);
  ASSERT_TRUE(r["other_threads_cause"].is_object()) << r.dump(2);
  EXPECT_EQ(r["other_threads_cause"]["part"], "outside_cuda");
  EXPECT_GT(r["tail"]["other_threads_s"].value("outside_cuda", 0.0), 0.001);  // ~8 ms of the helper's CPU each
  const json* f = tail_finding(j);
  ASSERT_NE(f, nullptr) << j["findings"].dump(2);
  bool helper_stack = false;
  for (const auto& s : (*f)["call_sites"])
    for (const auto& frame : s["frames"])
      helper_stack |= s["function"] == "(on CPU)" && frame.value("function", "").find("refresh") != std::string::npos;
  EXPECT_TRUE(helper_stack) << (*f)["call_sites"].dump(2);
  bool cpu_line = false;
  for (const auto& e : (*f)["evidence"])
    cpu_line |= e.get<std::string>().find("another thread in host code on the CPU") != std::string::npos;
  EXPECT_TRUE(cpu_line) << (*f)["evidence"].dump(2);
}

// --requests cudaProfilerApi: each cudaProfilerStart/Stop window is a
// request, whether the run recorded everything or only inside the windows
// (--capture-range cudaProfilerApi --capture-range-end repeat); the same
// tail cause either way.
TEST_F(TailLatency, ProfilerApiWindowsAreRequests) {
  for (const auto& run_args : {std::vector<std::string>{}, std::vector<std::string>{"--capture-range", "cudaProfilerApi", "--capture-range-end", "repeat"}}) {
    const std::string path = trace({"--requests", "120", "--large-every", "10", "--profiler-api"}, run_args);
    const json j = analyze(path, {}, "cudaProfilerApi");
    ASSERT_FALSE(j.is_discarded());
    const json& r = j["requests"];
    EXPECT_EQ(r["count"], 120) << run_args.size();
    expect_quantiles_of(profiler_window_durations(path), r);
    EXPECT_EQ(r["tail_cause"]["part"], "copy_to_device_pageable") << r.dump(2);
    const auto text = run({gpuscope_exe(), "analyze", path, "--requests", "cudaProfilerApi"});
    EXPECT_NE(text.out.find("each a cudaProfilerStart->cudaProfilerStop window"), std::string::npos) << text.out;
  }
  // A trace without profiler calls has no such requests: an error naming it.
  const std::string nvtx = trace({"--requests", "20"});
  const auto r = run({gpuscope_exe(), "analyze", nvtx, "--requests", "cudaProfilerApi"});
  EXPECT_EQ(r.exit_code(), 2);
  EXPECT_NE(r.err.find("--requests cudaProfilerApi: " + nvtx + " has no cudaProfilerStart or cuProfilerStart call"),
            std::string::npos)
      << r.err;
}

// diff --requests: the quantiles are figures and gates, the tail's cause a
// gate; each run's figures are its own analysis's quantiles.
TEST_F(TailLatency, DiffGatesOnTheQuantilesAndTheTailsCause) {
  const std::string base = trace({"--requests", "120", "--healthy"});
  const std::string next = trace({"--requests", "120", "--large-every", "10"});
  const auto r = run({gpuscope_exe(), "diff", base, next, "--json", "--requests", "request", "--fail-on",
                      "p99>+10%,tail-cause-changed"});
  EXPECT_EQ(r.exit_code(), 1) << r.out << r.err;
  const json d = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(d.is_discarded()) << r.out;
  EXPECT_EQ(d["requests"]["new_tail_cause"], "copy_to_device_pageable") << d["requests"].dump();
  std::map<std::string, json> figures;
  for (const auto& f : d["figures"]) figures[f["name"]] = f;
  const auto figure_name = [](double quantile) {  // 0.999 -> "p99.9"
    char name[16];
    std::snprintf(name, sizeof name, "p%g", quantile * 100);
    return std::string(name);
  };
  for (const auto& [path, side] : {std::pair{base, "base"}, std::pair{next, "new"}}) {
    const json analysis = analyze(path);
    for (const auto& q : analysis["requests"]["quantiles"])
      EXPECT_DOUBLE_EQ(figures.at(figure_name(q["quantile"].get<double>()))[side].get<double>(),
                       q["seconds"].get<double>());
    EXPECT_EQ(figures.at("requests")[side], 120);
  }
  ASSERT_EQ(d["gates"].size(), 2u);
  EXPECT_EQ(d["gates"][0]["status"], "FAIL") << d["gates"].dump();  // 64 MiB pageable inputs in the tail
  EXPECT_EQ(d["gates"][1]["status"], "FAIL") << d["gates"].dump();
  const auto text = run({gpuscope_exe(), "diff", base, next, "--requests", "request"});
  EXPECT_NE(text.out.find("-> copy_to_device_pageable   CHANGED"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("request p99"), std::string::npos) << text.out;
  // A run against itself passes every request gate.
  const auto same = run({gpuscope_exe(), "diff", next, next, "--requests", "request", "--fail-on",
                         "p50>+0%,p99.9>+0%,max_latency>+0,tail-cause-changed"});
  EXPECT_EQ(same.exit_code(), 0) << same.out << same.err;
  // A request gate without --requests is an error naming the gate.
  const auto bare = run({gpuscope_exe(), "diff", base, next, "--fail-on", "wall>+50%,p99>+10%"});
  EXPECT_EQ(bare.exit_code(), 2);
  EXPECT_NE(bare.err.find("'p99>+10%' judges request latency: it needs --requests NAME"), std::string::npos)
      << bare.err;
}

// A batch job on the same GPU: its bursts hold the engines the service's
// kernels need, so the requests that arrive during one wait in their own
// cudaStreamSynchronize (the median's own largest part: no own-thread
// finding). Given with the service's trace, the batch job's trace names the
// cause: its process, busy during most tail requests and few of the band's
// (a burst every 100 ms: at every 50 ms, a quarter of the band's requests
// overlapped one often enough to fail the bar one run in five). Analyzed
// alone, the service's trace names it only from the driver's samples.
TEST_F(TailLatency, ABatchJobOnTheSameGpuIsTheTailsCoTenant) {
  const auto [service, batch] = service_beside_batch({"--requests", "120", "--healthy"});
  const int batch_pid = pid_of(batch);
  ASSERT_GT(batch_pid, 0);
  const json both = analyze(service, {batch});
  ASSERT_TRUE(both.contains("traces")) << both.dump().substr(0, 2000);
  const json& j = both["traces"][0];
  const json& r = j["requests"];
  expect_direct_quantiles(service, r);
  EXPECT_EQ(r["other_traces"], 1);
  ASSERT_TRUE(r["co_tenant_cause"].is_object()) << r.dump(2);
  EXPECT_EQ(r["co_tenant_cause"]["pid"], batch_pid);
  EXPECT_GE(r["co_tenant_cause"]["tail_share"].get<double>(), 0.5);
  EXPECT_LE(r["co_tenant_cause"]["median_share"].get<double>(), 0.2);
  ASSERT_EQ(r["co_tenants"].size(), 1u) << r["co_tenants"].dump(2);
  EXPECT_EQ(r["co_tenants"][0]["busy_from"], "waiting_calls");  // simgpu: no CUPTI
  const json* f = tail_finding(j);
  ASSERT_NE(f, nullptr) << j["findings"].dump(2);
  EXPECT_EQ((*f)["class"], "sync_bound");
  EXPECT_NE((*f)["title"].get<std::string>().find("another process uses the same GPU: pid " + std::to_string(batch_pid) +
                                                  " (batch_embed)"),
            std::string::npos)
      << (*f)["title"];
  bool waited_in_serve = false;
  for (const auto& s : (*f)["call_sites"])
    for (const auto& frame : s["frames"])
      waited_in_serve |= s["function"] == "cudaStreamSynchronize" && frame.value("function", "").find("serve") != std::string::npos;
  EXPECT_TRUE(waited_in_serve) << (*f)["call_sites"].dump(2);
  // The batch job's own trace has no requests: analyzed whole, no error.
  EXPECT_TRUE(both["traces"][1]["requests"].is_null());
  // The Prometheus exposition names the co-tenant in its own labels.
  const auto p = run({gpuscope_exe(), "analyze", "--format", "prometheus", "--requests", "request", service, batch});
  EXPECT_EQ(p.exit_code(), 0) << p.err;
  EXPECT_NE(p.out.find("co_tenant_pid=\"" + std::to_string(batch_pid) + "\",co_tenant_exe=\"batch_embed\"} "),
            std::string::npos)
      << p.out;
  // Alone, the service's trace has the same tail and no other trace. The
  // driver's per-process samples in it may have caught the batch job at
  // work (simgpu's NVML shows the processes of one SIMGPU_SHARED_ID): then
  // the cause comes from them and says so. When they did not, there is no
  // cause to name, and the report says which evidence it lacks.
  const json alone = analyze(service);
  const json& ar = alone["requests"];
  EXPECT_EQ(ar["other_traces"], 0);
  if (!ar["co_tenant_cause"].is_null()) {
    EXPECT_EQ(ar["co_tenant_cause"]["pid"], batch_pid);
    ASSERT_EQ(ar["co_tenants"].size(), 1u) << ar["co_tenants"].dump(2);
    EXPECT_EQ(ar["co_tenants"][0]["busy_from"], "driver_samples");
  } else {
    EXPECT_EQ(tail_finding(alone), nullptr);
    const auto text = run({gpuscope_exe(), "analyze", service, "--requests", "request"});
    if (ar["driver_samples"]["other_processes"] == 0)
      EXPECT_NE(text.out.find("other processes on the GPU: not seen"), std::string::npos) << text.out;
  }
}

// The same kind of batch job run without gpuscope: nobody traced it, but
// the driver lists it in the per-process utilization samples the service's
// own trace carries (simgpu's NVML answers them from the shared device).
// Its bursts (25 ms) last longer than the sampling window (5 ms at --nvml-hz 200),
// so the samples can tell the requests during a burst from the others.
TEST_F(TailLatency, ABatchJobNobodyTracedIsNamedFromTheDriversSamples) {
  const std::string id = "gpuscope-untraced-" + std::to_string(getpid());
  auto batch = std::async(std::launch::async, [&] {
    return run({bin("batch_embed"), "--bursts", "20", "--period-ms", "100", "--burst-kernels", "25"},
               environment_with({"LD_LIBRARY_PATH=" + std::string(GPUSCOPE_SIMGPU_LIB_DIR), "SIMGPU_SHARED_ID=" + id},
                                {"LD_PRELOAD", "GPUSCOPE_OUTPUT", "SIMGPU_NODE"}));
  });
  const std::string service = trace({"--requests", "300", "--healthy"}, {"--nvml-hz", "200"}, "request_service", id);
  EXPECT_EQ(batch.get().exit_code(), 0);
  const json j = analyze(service);
  const json& r = j["requests"];
  EXPECT_EQ(r["other_traces"], 0);
  EXPECT_GT(r["driver_samples"]["samples"].get<uint64_t>(), 0u) << r.dump(2);
  EXPECT_TRUE(r["driver_samples"]["named_self"]);
  EXPECT_EQ(r["driver_samples"]["other_processes"], 1);
  ASSERT_TRUE(r["co_tenant_cause"].is_object()) << r.dump(2);
  EXPECT_EQ(r["co_tenant_cause"]["exe"], "batch_embed");
  ASSERT_FALSE(r["co_tenants"].empty());
  const json& tenant = r["co_tenants"][0];
  EXPECT_EQ(tenant["busy_from"], "driver_samples");
  EXPECT_EQ(tenant["trace"], "");
  EXPECT_GT(tenant["sample_window_s"].get<double>(), 0.0);
  const json* f = tail_finding(j);
  ASSERT_NE(f, nullptr) << j["findings"].dump(2);
  EXPECT_NE((*f)["title"].get<std::string>().find("another process uses the same GPU: pid "), std::string::npos);
  bool says_estimate = false;
  for (const auto& e : (*f)["evidence"]) says_estimate |= e.get<std::string>().find("it was not traced") != std::string::npos;
  EXPECT_TRUE(says_estimate) << (*f)["evidence"].dump(2);
  // Without the samples (--nvml-hz 0) the report says where its blind spot is.
  const std::string blind = trace({"--requests", "120", "--healthy"}, {"--nvml-hz", "0"});
  const auto text = run({gpuscope_exe(), "analyze", blind, "--requests", "request"});
  EXPECT_NE(text.out.find("the driver's per-process samples (NVML) are not in this trace"), std::string::npos)
      << text.out;
}

// A batch job whose bursts are over before the service starts shares the
// GPU but not the service's time: given together, no co-tenant cause and no
// finding for a healthy service. Traces without the requests, alone, are an
// error naming them all.
TEST_F(TailLatency, ABatchJobThatRanEarlierIsNoCoTenantCause) {
  const std::string id = "gpuscope-cotenant-early-" + std::to_string(getpid());
  const std::string batch = trace({"--bursts", "3", "--period-ms", "20"}, {}, "batch_embed", id);
  const std::string service = trace({"--requests", "120", "--healthy"}, {}, "request_service", id);
  const json both = analyze(service, {batch});
  const json& r = both["traces"][0]["requests"];
  EXPECT_EQ(r["other_traces"], 1);
  EXPECT_TRUE(r["co_tenants"].empty()) << r["co_tenants"].dump(2);
  EXPECT_TRUE(r["co_tenant_cause"].is_null());
  EXPECT_EQ(tail_finding(both["traces"][0]), nullptr) << both["traces"][0]["findings"].dump(2);
  const auto none = run({gpuscope_exe(), "analyze", batch, batch, "--requests", "request"});
  EXPECT_EQ(none.exit_code(), 2);
  EXPECT_NE(none.err.find("--requests request: none of the 2 traces has an NVTX range with that message"),
            std::string::npos)
      << none.err;
}

}  // namespace
}  // namespace gpuscope::test
