// CPU stack samples end to end (issue 18 item 9), on simgpu, run alone
// (RUN_SERIAL: the CPU-bound finding needs its busy thread on a core): the CPU-bound
// sample's finding cites the host function that burns the CPU, symbolized,
// instead of CUDA call sites; its --fixed variant's worker threads, started
// after capture began, are sampled too; and where the kernel refuses
// perf_event_open (a seccomp filter here) or sampling is off, the program
// runs as ever, the trace says why, and the finding falls back to call sites.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "e2e_support.h"

namespace gpuscope::test {
namespace {

using nlohmann::json;

class CpuSamples : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!simgpu_built()) GTEST_SKIP() << "simgpu is not built";
  }

  // `gpuscope run` of cpu_bound with `args`, started through `wrapper`
  // (a program that execs the rest of its command line) when given.
  std::string trace(const std::vector<std::string>& args, const std::string& wrapper = "",
                    const std::vector<std::string>& run_options = {}, const std::vector<std::string>& env = {}) {
    const std::string path = dir_.file("cpu_bound" + std::to_string(++n_) + ".gpuscope");
    std::vector<std::string> argv;
    if (!wrapper.empty()) argv.push_back(bin(wrapper));
    for (const std::string& a : {gpuscope_exe(), std::string("run"), std::string("-q"), std::string("-o"), path})
      argv.push_back(a);
    argv.insert(argv.end(), run_options.begin(), run_options.end());
    argv.push_back("--");
    argv.push_back(bin("cpu_bound"));
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<std::string> set = {"LD_LIBRARY_PATH=" + std::string(GPUSCOPE_SIMGPU_LIB_DIR)};
    set.insert(set.end(), env.begin(), env.end());
    last_run_ = run(argv, environment_with(set, {"LD_PRELOAD", "GPUSCOPE_OUTPUT", "SIMGPU_NODE"}));
    EXPECT_EQ(last_run_.exit_code(), 0) << last_run_.err;
    return path;
  }

  json analyze_json(const std::string& path) {
    const auto r = run({gpuscope_exe(), "analyze", "--json", path});
    EXPECT_EQ(r.exit_code(), 0) << r.err;
    return json::parse(r.out, nullptr, false);
  }

  static const json* cpu_finding(const json& j) {
    for (const json& f : j["findings"])
      if (f["id"] == "cpu.gpu_starved_by_host") return &f;
    return nullptr;
  }

  TempDir dir_;
  int n_ = 0;
  ProcessResult last_run_;
};

TEST_F(CpuSamples, TheCpuBoundFindingCitesTheHostLoopThatBurnsTheCpu) {
  const std::string path = trace({"--batches", "60"});
  const json j = analyze_json(path);
  ASSERT_FALSE(j.is_discarded());
  const json* f = cpu_finding(j);
  ASSERT_NE(f, nullptr) << j["findings"].dump(2);
  EXPECT_TRUE((*f)["call_sites"].empty()) << "CUDA calls are not where a CPU-bound host spends its time";
  ASSERT_FALSE((*f)["host_stacks"].empty()) << f->dump(2);
  const json& top = (*f)["host_stacks"][0];
  EXPECT_GE(top["share"].get<double>(), 0.5) << f->dump(2);
  // The single-threaded preprocessing loop: tokenize's mixing rounds, inlined
  // into run_unfixed, in the sample's own source.
  std::string functions, files;
  for (const json& fr : top["frames"]) {
    functions += fr["function"].get<std::string>() + "\n";
    files += fr["file"].get<std::string>() + "\n";
  }
  EXPECT_NE(functions.find("run_unfixed"), std::string::npos) << top.dump(2);
  EXPECT_NE(files.find("cpu_bound.cu"), std::string::npos) << top.dump(2);
  const std::string evidence = (*f)["evidence"].dump();
  EXPECT_NE(evidence.find("hottest function: sample::mix"), std::string::npos) << evidence;
  EXPECT_NE(evidence.find("a serial host loop"), std::string::npos) << evidence;
  const auto text = run({gpuscope_exe(), "analyze", path});
  EXPECT_NE(text.out.find("host stacks (CPU samples):"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("CPU stack samples: "), std::string::npos) << text.out;
}

TEST_F(CpuSamples, TheFixedVariantsWorkerThreadsAreSampledFromTheirStart) {
  // Each batch's worker prepares half of 262144 items: several ms of CPU, so
  // several samples, however fast the machine.
  // At 1 kHz (the default is 250 Hz): each short worker must get samples.
  const TraceContents t = read_trace_file(
      trace({"--batches", "30", "--fixed", "--threads", "2", "--items", "262144"}, "", {"--cpu-sampling", "1000"}));
  ASSERT_TRUE(t.opened) << t.error;
  ASSERT_TRUE(t.summary.host_sampling.has_value());
  EXPECT_EQ(t.summary.host_sampling->state, static_cast<uint8_t>(fb::HostSamplingState::Active));
  std::set<uint32_t> tids;
  for (const auto& s : t.host_samples) tids.insert(s.tid());
  const uint32_t main_tid = static_cast<uint32_t>(t.summary.process->pid);
  tids.erase(main_tid);
  // 30 batches, a worker each, started after capture began: only inherited
  // events see them.
  EXPECT_GE(tids.size(), 20u) << t.host_samples.size() << " samples";
  for (const auto& s : t.host_samples) EXPECT_NE(s.stack_id(), 0u);
}

TEST_F(CpuSamples, WhenTheKernelRefusesCaptureGoesOnAndSaysWhy) {
  const std::string path = trace({"--batches", "20"}, "no_perf_events");
  EXPECT_NE(last_run_.out.find("20 batches of 65536 items"), std::string::npos) << last_run_.out;
  const TraceContents t = read_trace_file(path);
  ASSERT_TRUE(t.opened) << t.error;
  ASSERT_TRUE(t.summary.host_sampling.has_value());
  EXPECT_EQ(t.summary.host_sampling->state, static_cast<uint8_t>(fb::HostSamplingState::Unavailable));
  EXPECT_NE(t.summary.host_sampling->reason.find("perf_event_open: Permission denied"), std::string::npos)
      << t.summary.host_sampling->reason;
  EXPECT_TRUE(t.host_samples.empty());
  EXPECT_FALSE(t.api_calls.empty());  // everything else recorded as ever
  const auto text = run({gpuscope_exe(), "analyze", path});
  EXPECT_NE(text.out.find("CPU stack samples: unavailable (perf_event_open: Permission denied"), std::string::npos)
      << text.out;
  const json j = analyze_json(path);
  const json* f = cpu_finding(j);
  ASSERT_NE(f, nullptr) << j.dump(2);
  EXPECT_TRUE((*f)["host_stacks"].empty());
  EXPECT_FALSE((*f)["call_sites"].empty()) << "without samples, the CUDA calls are all there is";
}

TEST_F(CpuSamples, SamplingSwitchedOffIsSaidSo) {
  const TraceContents t = read_trace_file(trace({"--batches", "5"}, "", {"--cpu-sampling", "0"}));
  ASSERT_TRUE(t.opened) << t.error;
  ASSERT_TRUE(t.summary.host_sampling.has_value());
  EXPECT_EQ(t.summary.host_sampling->state, static_cast<uint8_t>(fb::HostSamplingState::Off));
  EXPECT_TRUE(t.host_samples.empty());
}

// Sampling starts GPUSCOPE_CPU_SAMPLING_DELAY_MS into the capture: a
// program that ends sooner never opens a perf event (whose first open can
// cost the process ~10 ms), and its trace says why it has no samples.
TEST_F(CpuSamples, AProgramThatEndsBeforeSamplingStartsNeverOpensAnEvent) {
  // Under the wrapper every perf_event_open fails: the reason tells whether one was tried.
  const std::string path = trace({"--batches", "5"}, "no_perf_events", {}, {"GPUSCOPE_CPU_SAMPLING_DELAY_MS=600000"});
  const TraceContents t = read_trace_file(path);
  ASSERT_TRUE(t.opened) << t.error;
  ASSERT_TRUE(t.summary.host_sampling.has_value());
  EXPECT_EQ(t.summary.host_sampling->state, static_cast<uint8_t>(fb::HostSamplingState::Unavailable));
  const std::string& reason = t.summary.host_sampling->reason;
  EXPECT_NE(reason.find("not started: the capture ended "), std::string::npos) << reason;
  EXPECT_NE(reason.find("before sampling's start at 600000 ms (GPUSCOPE_CPU_SAMPLING_DELAY_MS)"), std::string::npos)
      << reason;
  EXPECT_TRUE(t.host_samples.empty());
  const auto text = run({gpuscope_exe(), "analyze", path});
  EXPECT_NE(text.out.find("CPU stack samples: unavailable (not started: the capture ended"), std::string::npos)
      << text.out;
}

TEST_F(CpuSamples, WithNoDelaySamplingStartsWithTheCapture) {
  // Ended long before the default 50 ms with the delay: 2 short batches.
  const TraceContents t = read_trace_file(
      trace({"--batches", "2", "--items", "4096"}, "", {}, {"GPUSCOPE_CPU_SAMPLING_DELAY_MS=0"}));
  ASSERT_TRUE(t.opened) << t.error;
  ASSERT_TRUE(t.summary.host_sampling.has_value());
  EXPECT_EQ(t.summary.host_sampling->state, static_cast<uint8_t>(fb::HostSamplingState::Active))
      << t.summary.host_sampling->reason;
}

}  // namespace
}  // namespace gpuscope::test
