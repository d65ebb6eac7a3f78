// `gpuscope analyze` end to end: every sample traced on simgpu gets its
// class as the verdict and its --fixed variant does not; silent CPU fallback
// is found on simgpu's no-device node, with the real CUDA runtime and no
// driver, and with hidden devices; the pcie_bound report says what a user
// needs; bad input gets one line and exit status 2. These tests run alone
// (RUN_SERIAL): the verdicts are about where time goes, and a second test
// process competing for the two CI cores would change that.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "../e2e/e2e_support.h"

namespace gpuscope::test {
namespace {

using nlohmann::json;

std::string simgpu_path() { return "LD_LIBRARY_PATH=" + std::string(GPUSCOPE_SIMGPU_LIB_DIR); }
std::string node(const std::string& name) {
  return "SIMGPU_NODE=" + std::string(GPUSCOPE_SOURCE_DIR) + "/samples/simgpu/nodes/" + name + ".json";
}

class Verdicts : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!simgpu_built()) GTEST_SKIP() << "simgpu is not built";
  }

  // Traces the sample under `gpuscope run` and returns the trace's path.
  std::string trace(const std::vector<std::string>& sample_and_args, std::vector<std::string> env = {}) {
    const std::string path = dir_.file(sample_and_args.front() + std::to_string(++n_) + ".gpuscope");
    std::vector<std::string> argv = {gpuscope_exe(), "run", "-q", "-o", path, "--", bin(sample_and_args.front())};
    argv.insert(argv.end(), sample_and_args.begin() + 1, sample_and_args.end());
    if (env.empty()) env.push_back(simgpu_path());
    last_run_ = run(argv, environment_with(env, {"LD_PRELOAD", "GPUSCOPE_OUTPUT", "SIMGPU_NODE"}));
    EXPECT_TRUE(std::filesystem::exists(path)) << last_run_.err;
    return path;
  }

  json analyze_json(const std::string& path) {
    const auto r = run({gpuscope_exe(), "analyze", "--json", path});
    EXPECT_EQ(r.exit_code(), 0) << r.err;
    return json::parse(r.out, nullptr, false);
  }

  std::string verdict_of(const std::vector<std::string>& sample, std::vector<std::string> env = {}) {
    const json j = analyze_json(trace(sample, std::move(env)));
    return j.is_discarded() ? "<unparsable>" : j["verdict"]["class"].get<std::string>();
  }

  TempDir dir_;
  int n_ = 0;
  ProcessResult last_run_;
};

TEST_F(Verdicts, PcieBoundAndItsFix) {
  EXPECT_EQ(verdict_of({"pcie_bound"}), "pcie_bound");
  EXPECT_NE(verdict_of({"pcie_bound", "--fixed"}), "pcie_bound");
}

TEST_F(Verdicts, SyncBoundAndItsFix) {
  EXPECT_EQ(verdict_of({"sync_bound"}), "sync_bound");
  EXPECT_NE(verdict_of({"sync_bound", "--fixed"}), "sync_bound");
}

TEST_F(Verdicts, AllocatorChurnIsMemoryBoundAndItsFixIsNot) {
  EXPECT_EQ(verdict_of({"alloc_churn"}), "memory_bound");
  EXPECT_NE(verdict_of({"alloc_churn", "--fixed"}), "memory_bound");
}

// PyTorch's expandable segments given back after every step
// (torch.cuda.empty_cache()): the churn is cuMemCreate/cuMemMap and
// cuMemUnmap/cuMemRelease, which no cudaMalloc hook sees. Kept mapped, the
// same loop is not memory-bound.
TEST_F(Verdicts, ExpandableSegmentsEmptiedEveryStepAreAllocatorChurn) {
  const json j = analyze_json(trace({"alloc_churn", "--expandable", "--iters", "800"}));
  EXPECT_EQ(j["verdict"]["class"], "memory_bound") << j["findings"].dump(2);
  const json* churn = nullptr;
  for (const json& f : j["findings"])
    if (f["id"] == "memory.allocator_churn") churn = &f;
  ASSERT_NE(churn, nullptr) << j["findings"].dump(2);
  bool named = false;
  for (const json& e : (*churn)["evidence"])
    named |= e.get<std::string>().find("physical memory of CUDA's virtual memory API") != std::string::npos;
  EXPECT_TRUE(named) << churn->dump(2);
  EXPECT_NE(verdict_of({"alloc_churn", "--expandable", "--fixed", "--iters", "800"}), "memory_bound");
}

TEST_F(Verdicts, DramBoundKernelChainsAreMemoryBoundAndTheFusedKernelIsNot) {
  EXPECT_EQ(verdict_of({"memory_bound"}), "memory_bound");
  EXPECT_NE(verdict_of({"memory_bound", "--fixed"}), "memory_bound");
}

// The fused loop issues 30000 launches into simgpu's 1024-deep queue: each
// launch waits for a kernel to finish, so launch calls hold the thread most
// of the loop. That is the GPU pushing back, and with the host's setup and
// verification around the loop the GPU is idle for a good part of the run:
// the launch rule must judge GPU busy while the launches were issued.
TEST_F(Verdicts, LaunchesBlockedByAFullQueueAreNotLaunchBound) {
  const json j = analyze_json(trace({"memory_bound", "--fixed", "--iters", "30000"}));
  ASSERT_FALSE(j.is_discarded());
  EXPECT_NE(j["verdict"]["class"], "cpu_bound") << j["verdict"].dump();  // healthy on a quiet host
  for (const json& f : j["findings"]) EXPECT_NE(f["id"], "cpu.launch_bound") << f.dump();
  ASSERT_TRUE(j["metrics"].contains("gpu_util_during_launches")) << j["metrics"].dump();
  EXPECT_GE(j["metrics"]["gpu_util_during_launches"].get<double>(), 0.6);
}

// The same samples with CUPTI's device records, as on a real GPU: simgpu's
// driver injects gpuscope at cuInit (SIMGPU_INJECTION=1) and its simulated
// libcupti.so.13 records the model's kernels, copies and memsets. GPU busy
// then comes from device timestamps; the verdicts must not change.
TEST_F(Verdicts, DeviceRecordsFromCuptiKeepEverySamplesVerdict) {
  const std::vector<std::string> cupti = {simgpu_path(), "SIMGPU_INJECTION=1",
                                          std::string("GPUSCOPE_CUPTI_PATH=") + GPUSCOPE_SIMGPU_LIB_DIR +
                                              "/libcupti.so.13"};
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"pcie_bound"}, "pcie_bound"},     {{"sync_bound"}, "sync_bound"},     {{"alloc_churn"}, "memory_bound"},
      {{"memory_bound"}, "memory_bound"}, {{"cpu_bound"}, "cpu_bound"},       {{"compute_bound"}, "healthy"},
      {{"sync_bound", "--fixed"}, "healthy"}};
  for (const auto& [sample, expected] : cases) {
    const json j = analyze_json(trace(sample, cupti));
    ASSERT_FALSE(j.is_discarded());
    EXPECT_EQ(j["verdict"]["class"], expected) << sample[0] << (sample.size() > 1 ? " --fixed" : "");
    ASSERT_FALSE(j["coverage"].empty());
    EXPECT_EQ(j["coverage"][0].get<std::string>().rfind("device activity: CUPTI (", 0), 0u) << j["coverage"].dump();
  }
}

TEST_F(Verdicts, CpuBoundAndItsFix) {
  EXPECT_EQ(verdict_of({"cpu_bound"}), "cpu_bound");
  EXPECT_NE(verdict_of({"cpu_bound", "--fixed"}), "cpu_bound");
}

// A CPU-bound program beside a batch job nobody traced, on one simulated
// GPU: NVML's GPU-wide utilization is the batch job's busy time, which made
// the program read "healthy: GPU-bound". The driver's per-process samples
// name who held the GPU: its busy share is the program's part, and the
// waits its work spent queued behind the batch job's are put on that job.
TEST_F(Verdicts, AnUntracedJobOnTheSameGpuIsNotThisProgramsGpuTime) {
  const std::string id = "SIMGPU_SHARED_ID=gpuscope-shared-" + std::to_string(getpid());
  auto batch = std::async(std::launch::async, [&] {
    return run({bin("memory_bound"), "--iters", "30000"},
               environment_with({simgpu_path(), id}, {"LD_PRELOAD", "GPUSCOPE_OUTPUT", "SIMGPU_NODE"}));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // its kernels queued first
  const json j = analyze_json(trace({"cpu_bound"}, {simgpu_path(), id}));
  EXPECT_EQ(batch.get().exit_code(), 0);
  ASSERT_FALSE(j.is_discarded());
  const json& b = j["breakdown"];
  ASSERT_TRUE(b["other_processes_share"].is_number()) << b.dump(2);
  EXPECT_GE(b["other_processes_share"].get<double>(), 0.5) << b.dump(2);
  EXPECT_NE(b["busiest_other_process"].get<std::string>().find("(memory_bound)"), std::string::npos) << b.dump(2);
  ASSERT_TRUE(b["nvml_gpu_util_all_processes"].is_number()) << b.dump(2);
  EXPECT_LT(b["gpu_busy_share"].get<double>(), b["nvml_gpu_util_all_processes"].get<double>());
  EXPECT_NE(j["verdict"]["class"], "healthy") << j["verdict"].dump(2);
  bool put_on_the_job = false;
  for (const json& f : j["findings"]) put_on_the_job |= f["id"] == "sync.waits_for_other_processes";
  EXPECT_TRUE(put_on_the_job) << j["findings"].dump(2);
  const auto text = run({gpuscope_exe(), "analyze", dir_.file("cpu_bound" + std::to_string(n_) + ".gpuscope")});
  EXPECT_NE(text.out.find("this process's part of NVML utilization"), std::string::npos) << text.out;
}

TEST_F(Verdicts, ComputeBoundIsHealthy) {
  EXPECT_EQ(verdict_of({"compute_bound"}), "healthy");
  EXPECT_EQ(verdict_of({"compute_bound", "--fixed"}), "healthy");
}

TEST_F(Verdicts, FallbackOnANodeWithoutDevices) {
  const json j = analyze_json(trace({"cpu_fallback"}, {simgpu_path(), node("no-device")}));
  EXPECT_EQ(j["verdict"]["class"], "cpu_fallback");
  EXPECT_EQ(j["verdict"]["confidence"], "high");
  EXPECT_NE(j["findings"][0]["evidence"][0].get<std::string>().find("cudaErrorNoDevice (100)"), std::string::npos)
      << j["findings"][0].dump(2);
  EXPECT_NE(verdict_of({"cpu_fallback"}), "cpu_fallback");  // the default node has a device: no fallback
}

TEST_F(Verdicts, FallbackWithHiddenDevices) {
  const json j = analyze_json(trace({"cpu_fallback"}, {simgpu_path(), "CUDA_VISIBLE_DEVICES="}));
  EXPECT_EQ(j["verdict"]["class"], "cpu_fallback");
  EXPECT_NE(j["findings"][0].dump().find("CUDA_VISIBLE_DEVICES='' hides every GPU"), std::string::npos);
}

TEST_F(Verdicts, FallbackWithTheRealRuntimeAndNoDriver) {
  // The toolkit's own libcudart.so.13; no driver on this machine (35).
  if (run({bin("gpu_probe")}, environment_with({}, {"LD_LIBRARY_PATH"})).exit_code() == 0)
    GTEST_SKIP() << "a usable GPU is present";
  const std::string path = trace({"cpu_fallback"}, {"LD_LIBRARY_PATH=/usr/local/cuda/lib64"});
  const json j = analyze_json(path);
  EXPECT_EQ(j["verdict"]["class"], "cpu_fallback");
  EXPECT_NE(j["findings"][0].dump().find("cudaErrorInsufficientDriver (35)"), std::string::npos)
      << j["findings"][0].dump(2);
}

TEST_F(Verdicts, ThePcieReportShowsBytesPageableBandwidthCallSiteAndFix) {
  const std::string path = trace({"pcie_bound"});
  const auto r = run({gpuscope_exe(), "analyze", path});
  ASSERT_EQ(r.exit_code(), 0) << r.err;
  const std::string& t = r.out;
  EXPECT_NE(t.find("VERDICT: PCIe-bound"), std::string::npos) << t;
  EXPECT_NE(t.find("16000 host-to-device copies (4000.0 MiB), 16001 device-to-host"), std::string::npos) << t;
  EXPECT_NE(t.find("100% of the bytes were copied from/to pageable memory"), std::string::npos) << t;
  EXPECT_NE(t.find("against the Gen5 x16 link's 63.0 GB/s"), std::string::npos) << t;
  EXPECT_NE(t.find("pcie_bound.cu:90"), std::string::npos) << t;  // the copy in serve_unfixed
  EXPECT_NE(t.find("fix: copy from pinned buffers"), std::string::npos) << t;
  // Sections in the documented order.
  size_t at = 0;
  for (const char* section : {"VERDICT:", "TIME BREAKDOWN", "CHECKS", "FINDINGS", "COVERAGE"}) {
    const size_t next = t.find(section, at);
    ASSERT_NE(next, std::string::npos) << section;
    at = next;
  }
  EXPECT_NE(t.find("device activity: unavailable (no driver)"), std::string::npos) << t;  // simgpu: no driver injects
}

TEST_F(Verdicts, JsonCarriesTheDocumentedFields) {
  const json j = analyze_json(trace({"sync_bound", "--iters", "20000"}));
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["schema_version"], 1);
  for (const char* key : {"trace", "program", "pid", "verdict", "breakdown", "metrics", "checks", "findings", "coverage"})
    EXPECT_TRUE(j.contains(key)) << key;
  for (const char* key : {"class", "label", "share", "confidence", "confidence_reason"})
    EXPECT_TRUE(j["verdict"].contains(key)) << key;
  ASSERT_EQ(j["checks"].size(), 5u);
  for (const auto& f : j["findings"])
    for (const char* key : {"id", "class", "severity", "share", "title", "evidence", "call_sites", "fix"})
      EXPECT_TRUE(f.contains(key)) << key;
  EXPECT_EQ(j["metrics"]["launches"], 20000);
  EXPECT_EQ(j["metrics"]["syncs"], 20001);
}

TEST_F(Verdicts, JsonValidatesAgainstThePublishedSchema) {
  const std::string source = GPUSCOPE_SOURCE_DIR;
  const auto r = run({"python3", source + "/tests/verdicts/check_json_schema.py", source + "/docs/analysis.schema.json",
                      gpuscope_exe(), trace({"pcie_bound", "--requests", "2000"}),
                      trace({"cpu_fallback", "--rounds", "2"}, {simgpu_path(), node("no-device")})});
  EXPECT_EQ(r.exit_code(), 0) << r.out << r.err;
}

TEST_F(Verdicts, RunEndsWithTheVerdictLine) {
  const auto r = run({gpuscope_exe(), "run", "-o", dir_.file("v.gpuscope"), "--", bin("sync_bound"), "--iters", "5000"},
                     environment_with({simgpu_path()}, {"LD_PRELOAD", "GPUSCOPE_OUTPUT"}));
  EXPECT_EQ(r.exit_code(), 0) << r.err;
  EXPECT_NE(r.err.find("gpuscope: verdict: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("details: gpuscope analyze " + dir_.file("v.gpuscope")), std::string::npos) << r.err;
}

// run's line is worked out without naming code addresses (pipeline.h,
// Detail::Verdict): it must be analyze's headline all the same, on
// samples whose findings cite CPU samples' functions and call sites.
// The verdict line `gpuscope run` prints, read from its stderr.
std::string run_verdict_line(const std::string& err) {
  const std::string prefix = "gpuscope: verdict: ", suffix = " -- details: ";
  const size_t at = err.find(prefix);
  if (at == std::string::npos) return "<no verdict line>";
  const size_t from = at + prefix.size();
  return err.substr(from, err.find(suffix, from) - from);
}

// run's line is analyze's headline, whether run read the trace while the
// program wrote it (the default, run_follower.h) or after it ended; the
// launch-bound run is long enough (0.7 s, ~50 frames) for reading along.
TEST_F(Verdicts, RunsVerdictLineIsAnalyzesHeadline) {
  const std::string launch_bound = "SIMGPU_NODE=" + std::string(GPUSCOPE_SOURCE_DIR) + "/tests/bench/launch_bound_node.json";
  const std::vector<std::vector<std::string>> cases = {
      {"cpu_bound"}, {"pcie_bound"}, {"sync_bound"}, {"alloc_churn"}, {"sync_bound", "--fixed", "--iters", "200000"}};
  for (const auto& args : cases) {
    for (const char* follow : {"on", "off"}) {
      const std::string name = args.front() + std::to_string(args.size()) + "-" + follow;
      const std::string path = dir_.file(name + ".gpuscope");
      std::vector<std::string> argv = {gpuscope_exe(), "run", "-o", path, "--", bin(args.front())};
      argv.insert(argv.end(), args.begin() + 1, args.end());
      std::vector<std::string> set = {simgpu_path(), std::string("GPUSCOPE_RUN_FOLLOW=") + follow};
      if (args.size() > 1) set.push_back(launch_bound);
      const auto r = run(argv, environment_with(set, {"LD_PRELOAD", "GPUSCOPE_OUTPUT", "SIMGPU_NODE"}));
      ASSERT_EQ(r.exit_code(), 0) << r.err;
      const std::string line = run_verdict_line(r.err);
      const auto report = run({gpuscope_exe(), "analyze", path});
      ASSERT_EQ(report.exit_code(), 0) << report.err;
      EXPECT_NE(report.out.find("VERDICT: " + line + "\n"), std::string::npos) << name << ": " << line << "\n"
                                                                                 << report.out;
      EXPECT_NE(report.out.find(".cu:"), std::string::npos) << name;  // the named frames the line did without
      EXPECT_NE(r.err.find("gpuscope: trace " + path + " ("), std::string::npos) << r.err;
    }
  }
}

TEST_F(Verdicts, ADirectoryStandsForTheTracesInIt) {
  trace({"sync_bound", "--iters", "2000"});
  trace({"pcie_bound", "--requests", "500"});
  const auto r = run({gpuscope_exe(), "analyze", dir_.path()});
  EXPECT_EQ(r.exit_code(), 0) << r.err;
  EXPECT_EQ(count_lines_with(r.out, "gpuscope analysis of "), 2) << r.out;
  const auto j = run({gpuscope_exe(), "analyze", "--json", dir_.path()});
  const json all = json::parse(j.out, nullptr, false);
  ASSERT_TRUE(all.is_object()) << j.out.substr(0, 200);
  EXPECT_EQ(all["traces"].size(), 2u);
  EXPECT_EQ(all["trees"].size(), 2u);  // two runs: a tree of one process each
  EXPECT_EQ(count_lines_with(r.out, "PROCESS TREE"), 0) << r.out;  // nothing links them
}

TEST_F(Verdicts, BadInputGetsOneLineAndStatusTwo) {
  std::ofstream(dir_.file("not-a-trace.gpuscope")) << "hello, I am not a trace\n";
  auto r = run({gpuscope_exe(), "analyze", dir_.file("not-a-trace.gpuscope")});
  EXPECT_EQ(r.exit_code(), 2);
  EXPECT_EQ(count_lines_with(r.err, "gpuscope:"), 1) << r.err;
  EXPECT_NE(r.err.find("not-a-trace.gpuscope"), std::string::npos) << r.err;
  r = run({gpuscope_exe(), "analyze", "--window", "3:1", dir_.file("not-a-trace.gpuscope")});
  EXPECT_EQ(r.exit_code(), 2);
}

TEST_F(Verdicts, ATruncatedTraceIsAnalyzedAsFarAsItGoes) {
  const std::string path = trace({"sync_bound", "--iters", "20000"});
  const auto size = std::filesystem::file_size(path);
  std::filesystem::resize_file(path, size * 2 / 3);
  const auto r = run({gpuscope_exe(), "analyze", path});
  EXPECT_EQ(r.exit_code(), 0) << r.err;
  EXPECT_NE(r.err.find("warning"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("VERDICT:"), std::string::npos);
  EXPECT_NE(r.out.find("truncated or without an end record"), std::string::npos) << r.out;
}

TEST_F(Verdicts, ACorruptFrameIsSkippedAndNamedWithItsOffset) {
  const std::string path = trace({"sync_bound", "--iters", "20000"});
  const auto size = std::filesystem::file_size(path);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size / 2));
    const char garbage[64] = "this is not zstd data, nor a frame header, nor anything else";
    f.write(garbage, sizeof garbage);
  }
  const auto r = run({gpuscope_exe(), "analyze", path});
  EXPECT_EQ(r.exit_code(), 0) << r.err;
  EXPECT_NE(r.err.find("at offset "), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("VERDICT:"), std::string::npos);
  EXPECT_NE(r.out.find("corrupt frame(s) skipped"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace gpuscope::test
