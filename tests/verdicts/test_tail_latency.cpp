// Tail latency per request end to end (issue 24, first slice):
// samples/workloads/request_service.cu traced on simgpu and analyzed with
// --requests request. The quantiles equal a direct nearest-rank computation
// over the trace's own NVTX push/pop records (read here, not through the
// analyzer's range model); the service whose every tenth request copies a
// large pageable input gets the tail finding naming those copies and their
// call site, the healthy one none. Judged by shares and ratios only: the
// machine may be loaded. RUN_SERIAL, like the other verdict tests.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
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

double nearest_rank_s(const std::vector<uint64_t>& sorted, double q) {
  const size_t rank = static_cast<size_t>(std::ceil(q * sorted.size()));
  return sorted[std::max<size_t>(rank, 1) - 1] / 1e9;
}

class TailLatency : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!simgpu_built() || !std::filesystem::exists(bin("request_service")))
      GTEST_SKIP() << "simgpu or request_service is not built";
  }

  std::string trace(const std::vector<std::string>& args) {
    const std::string path = dir_.file("service" + std::to_string(++n_) + ".gpuscope");
    std::vector<std::string> argv = {gpuscope_exe(), "run", "-q", "-o", path, "--", bin("request_service")};
    argv.insert(argv.end(), args.begin(), args.end());
    const auto ran = run(argv, environment_with({"LD_LIBRARY_PATH=" + std::string(GPUSCOPE_SIMGPU_LIB_DIR)},
                                                {"LD_PRELOAD", "GPUSCOPE_OUTPUT", "SIMGPU_NODE"}));
    EXPECT_EQ(ran.exit_code(), 0) << ran.err;
    return path;
  }

  static json analyze(const std::string& path, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv = {gpuscope_exe(), "analyze", "--json", path, "--requests", "request"};
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
    const std::vector<uint64_t> direct = request_durations(path);
    ASSERT_EQ(requests["count"].get<size_t>(), direct.size());
    for (const auto& q : requests["quantiles"])
      EXPECT_DOUBLE_EQ(q["seconds"].get<double>(), nearest_rank_s(direct, q["quantile"].get<double>()))
          << "p" << q["quantile"].get<double>() * 100;
    EXPECT_DOUBLE_EQ(requests["max_s"].get<double>(), direct.back() / 1e9);
    EXPECT_DOUBLE_EQ(requests["slowest"][0]["seconds"].get<double>(), direct.back() / 1e9);
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

}  // namespace
}  // namespace gpuscope::test
