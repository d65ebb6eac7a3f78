// Device activity (CUPTI, issue 6) end to end, on a machine without a GPU
// driver: `gpuscope run` points CUDA_INJECTION64_PATH at libgpuscope.so
// (unless the user set it), a run on simgpu is never injected and says so in
// the trace and the analysis, and an injection that does come (called here
// as the driver would) against the real libcupti without a driver degrades
// to host-only capture without changing the program.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "e2e_support.h"

namespace gpuscope::test {
namespace {

using State = fb::DeviceCollectionState;

class DeviceActivityTest : public ::testing::Test {
 protected:
  ProcessResult gpuscope_run(const std::vector<std::string>& program, std::vector<std::string> env = {},
                             std::vector<std::string> unset = {}) {
    // `program` may start with run's own options, ended by its own "--".
    std::vector<std::string> argv = {gpuscope_exe(), "run", "-q", "-o", dir_.path()};
    if (std::find(program.begin(), program.end(), "--") == program.end()) argv.push_back("--");
    argv.insert(argv.end(), program.begin(), program.end());
    env.push_back("LD_LIBRARY_PATH=" + std::string(GPUSCOPE_SIMGPU_LIB_DIR));
    env.push_back("SIMGPU_SHARED_ID=gpuscope-e2e-cupti-" + std::to_string(getpid()));
    unset.push_back("CUDA_INJECTION64_PATH");
    for (const auto& e : env)
      if (e.starts_with("CUDA_INJECTION64_PATH=")) unset.pop_back();
    return run(argv, environment_with(env, unset));
  }
  TraceContents only_trace() {
    const auto traces = traces_in(dir_.path());
    EXPECT_EQ(traces.size(), 1u);
    if (traces.size() != 1) return {};
    trace_path_ = traces[0];
    return read_trace_file(trace_path_);
  }
  TempDir dir_;
  std::string trace_path_;
};

TEST_F(DeviceActivityTest, RunOnSimgpuIsNeverInjectedAndTheAnalysisSaysSo) {
  if (!std::filesystem::exists(std::string(GPUSCOPE_SIMGPU_LIB_DIR) + "/libcudart.so.13")) GTEST_SKIP() << "simgpu not built";
  const auto r = gpuscope_run({bin("sync_bound"), "--iters", "50"});
  ASSERT_EQ(r.exit_code(), 0) << r.err;
  const auto t = only_trace();
  ASSERT_TRUE(t.summary.device_collection.has_value());
  EXPECT_EQ(t.summary.device_collection->state, static_cast<uint8_t>(State::NotInjected));
  EXPECT_EQ(t.summary.device_collection->reason, "no driver");
  EXPECT_FALSE(t.api_calls.empty()) << "host capture goes on";
  for (const auto& k : t.kernels) EXPECT_EQ(k.source(), fb::Source::Host);
  const auto a = run({gpuscope_exe(), "analyze", trace_path_});
  ASSERT_EQ(a.exit_code(), 0) << a.err;
  EXPECT_NE(a.out.find("device activity: unavailable (no driver)"), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("CUPTI: unavailable (no driver)"), std::string::npos) << a.out;
}

TEST_F(DeviceActivityTest, RunPointsCudaInjectionAtTheCaptureLibrary) {
  const auto r = gpuscope_run({"/bin/sh", "-c", "printf %s \"$CUDA_INJECTION64_PATH\""});
  ASSERT_EQ(r.exit_code(), 0) << r.err;
  EXPECT_EQ(std::filesystem::canonical(r.out), std::filesystem::canonical(capture_library())) << r.out;
}

TEST_F(DeviceActivityTest, AUsersOwnInjectionLibraryIsLeftAloneAndNamed) {
  const auto r = gpuscope_run({bin("behave"), "out:x"}, {"CUDA_INJECTION64_PATH=/opt/other/libinject.so"});
  ASSERT_EQ(r.exit_code(), 0) << r.err;
  const auto t = only_trace();
  ASSERT_TRUE(t.summary.device_collection.has_value());
  EXPECT_EQ(t.summary.device_collection->reason,
            "CUDA_INJECTION64_PATH names another library: /opt/other/libinject.so");
}

// GPUSCOPE_CUPTI_KINDS=off: the injection comes and libcupti is never
// loaded; the trace says device collection was turned off, and by what.
TEST_F(DeviceActivityTest, CuptiKindsOffTurnsDeviceCollectionOffAndSaysSo) {
  const auto r = gpuscope_run({bin("behave"), "inject", "out:done"}, {"GPUSCOPE_CUPTI_KINDS=off"});
  ASSERT_EQ(r.exit_code(), 0) << r.err;
  EXPECT_EQ(r.out, "inject:1\ndone\n");
  const auto t = only_trace();
  ASSERT_TRUE(t.summary.device_collection.has_value());
  const auto& d = *t.summary.device_collection;
  EXPECT_EQ(d.state, static_cast<uint8_t>(State::Failed));
  EXPECT_EQ(d.reason, "turned off (GPUSCOPE_CUPTI_KINDS=off): host-side capture only");
  EXPECT_TRUE(d.cupti_path.empty()) << "libcupti is not loaded";
  const auto a = run({gpuscope_exe(), "analyze", trace_path_});
  EXPECT_NE(a.out.find("off (turned off (GPUSCOPE_CUPTI_KINDS=off)"), std::string::npos) << a.out;
}

// `gpuscope run --device-activity off|kernels` is the variable, set for the
// program; off, an injection loads no CUPTI and the trace says so.
TEST_F(DeviceActivityTest, DeviceActivityKernelsIsTheKindsVariable) {
  const auto kernels = gpuscope_run({"--device-activity", "kernels", "--", "/bin/sh", "-c",
                                     "printf %s \"$GPUSCOPE_CUPTI_KINDS\""});
  ASSERT_EQ(kernels.exit_code(), 0) << kernels.err;
  EXPECT_EQ(kernels.out, "none");
}

// Sampled: the schedule the library reads, the default's or the one given;
// a schedule the library would not take is a usage error here already.
TEST_F(DeviceActivityTest, DeviceActivitySampledIsTheSamplingVariable) {
  const std::vector<std::string> print = {"--", "/bin/sh", "-c", "printf %s \"$GPUSCOPE_DEVICE_SAMPLING\""};
  auto with = [&](std::vector<std::string> args) {
    args.insert(args.end(), print.begin(), print.end());
    return gpuscope_run(args);
  };
  const auto by_default = with({"--device-activity", "sampled"});
  ASSERT_EQ(by_default.exit_code(), 0) << by_default.err;
  EXPECT_EQ(by_default.out, "20/2000");
  const auto given = with({"--device-activity", "sampled:50/1000"});
  ASSERT_EQ(given.exit_code(), 0) << given.err;
  EXPECT_EQ(given.out, "50/1000");
  for (const char* bad : {"sampled:1000/50", "sampled:0/100", "sampled:", "sampled:20"}) {
    const auto r = with({"--device-activity", bad});
    EXPECT_EQ(r.exit_code(), 2) << bad;
    EXPECT_NE(r.err.find("WINDOW_MS/PERIOD_MS"), std::string::npos) << bad << ": " << r.err;
  }
}

TEST_F(DeviceActivityTest, DeviceActivityOffLoadsNoCuptiAndSaysSo) {
  const auto off = gpuscope_run({"--device-activity", "off", "--", bin("behave"), "inject", "out:done"});
  ASSERT_EQ(off.exit_code(), 0) << off.err;
  const auto t = only_trace();
  ASSERT_TRUE(t.summary.device_collection.has_value());
  EXPECT_NE(t.summary.device_collection->reason.find("turned off"), std::string::npos);
  const auto bad = gpuscope_run({"--device-activity", "some", "--", "true"});
  EXPECT_EQ(bad.exit_code(), 2) << "a usage error, named";
  EXPECT_NE(bad.err.find("--device-activity"), std::string::npos) << bad.err;
}

std::vector<std::string> lines_of(const std::string& path) {
  std::vector<std::string> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// A capture range: the program starts CUDA (the driver injects gpuscope)
// and only later calls cudaProfilerStart, as programs do. CUPTI is set up
// at CUDA's start, off at once, on while each window is open, and flushed
// at the end: here through a stand-in libcupti that logs those switches.
TEST_F(DeviceActivityTest, DeviceCollectionFollowsTheCaptureWindows) {
  if (!std::filesystem::exists(std::string(GPUSCOPE_SIMGPU_LIB_DIR) + "/libcudart.so.13")) GTEST_SKIP() << "simgpu not built";
  const std::string log = dir_.path() + "/cupti.log";
  const auto r = gpuscope_run({"--capture-range", "cudaProfilerApi", "--capture-range-end", "repeat", "--", bin("behave"),
                               "inject", "profiler:start", "profiler:stop", "profiler:start", "profiler:stop", "out:done"},
                              {std::string("GPUSCOPE_CUPTI_PATH=") + GPUSCOPE_FAKE_CUPTI, "FAKE_CUPTI_LOG=" + log});
  ASSERT_EQ(r.exit_code(), 0) << r.err;
  EXPECT_EQ(r.out, "inject:1\nprofiler:start:0\nprofiler:stop:0\nprofiler:start:0\nprofiler:stop:0\ndone\n");
  // Callbacks on before the kernel kind each time: a window's first kernels
  // are never recorded while no call can be joined to them.
  const std::vector<std::string> expected = {"subscribe", "callbacks on", "on", "off", "callbacks off",
                                             "callbacks on", "on", "off", "callbacks off",
                                             "callbacks on", "on", "off", "callbacks off", "flush forced"};
  EXPECT_EQ(lines_of(log), expected) << "set up at injection, off until the first window, on in each";
  const auto t = only_trace();
  ASSERT_TRUE(t.summary.device_collection.has_value());
  EXPECT_EQ(t.summary.device_collection->state, static_cast<uint8_t>(State::Active));
  EXPECT_EQ(t.summary.device_collection->cupti_path, GPUSCOPE_FAKE_CUPTI);
}

// After the last window ("stop") capture is over: the trace is finalized
// and collection finished with it, so the program pays nothing for CUPTI.
TEST_F(DeviceActivityTest, AfterTheLastWindowCollectionIsFinished) {
  if (!std::filesystem::exists(std::string(GPUSCOPE_SIMGPU_LIB_DIR) + "/libcudart.so.13")) GTEST_SKIP() << "simgpu not built";
  const std::string log = dir_.path() + "/cupti.log";
  const auto r = gpuscope_run({"--capture-range", "cudaProfilerApi", "--", bin("behave"), "inject", "profiler:start",
                               "profiler:stop", "profiler:start", "profiler:stop", "out:done"},
                              {std::string("GPUSCOPE_CUPTI_PATH=") + GPUSCOPE_FAKE_CUPTI, "FAKE_CUPTI_LOG=" + log});
  ASSERT_EQ(r.exit_code(), 0) << r.err;
  const std::vector<std::string> expected = {"subscribe",    "callbacks on", "on",           "off", "callbacks off",
                                             "callbacks on", "on",           "off", "callbacks off", "flush forced"};
  EXPECT_EQ(lines_of(log), expected) << "the second range opens nothing";
}

// simgpu's simulated CUPTI: with SIMGPU_INJECTION=1 its driver calls
// InitializeInjection at cuInit as a real driver does, and its
// libcupti.so.13 records the device model's work.
std::vector<std::string> simulated_cupti() {
  return {"SIMGPU_INJECTION=1", std::string("GPUSCOPE_CUPTI_PATH=") + GPUSCOPE_SIMGPU_LIB_DIR + "/libcupti.so.13"};
}

const std::vector<std::string> kPhases = {"--rounds", "3", "--loads", "3", "--kernels", "5", "--clears", "4"};

std::vector<std::string> phases_run(std::vector<std::string> run_options) {
  run_options.push_back("--");
  run_options.push_back(bin("profiled_phases"));
  run_options.insert(run_options.end(), kPhases.begin(), kPhases.end());
  return run_options;
}

template <class Records> size_t from_device(const Records& records) {
  return static_cast<size_t>(std::count_if(records.begin(), records.end(),
                                           [](const auto& r) { return r.source() == fb::Source::Device; }));
}

// Every device record names the hooked call that queued it.
template <class Records> void expect_linked_to_calls(const TraceContents& t, const Records& records) {
  std::set<uint64_t> calls;
  for (const auto& c : t.api_calls) calls.insert(c.correlation_id());
  for (const auto& r : records) {
    if (r.source() != fb::Source::Device) continue;
    EXPECT_NE(r.correlation_id(), 0u);
    EXPECT_TRUE(calls.count(r.correlation_id())) << "device record with no call " << r.correlation_id();
  }
}

TEST_F(DeviceActivityTest, OnTheSimulatedCuptiEveryDeviceOperationIsLinkedToItsCall) {
  if (!std::filesystem::exists(bin("profiled_phases"))) GTEST_SKIP() << "samples not built";
  const auto r = gpuscope_run(phases_run({}), simulated_cupti());
  ASSERT_EQ(r.exit_code(), 0) << r.err;
  const auto t = only_trace();
  ASSERT_TRUE(t.summary.device_collection.has_value());
  EXPECT_EQ(t.summary.device_collection->state, static_cast<uint8_t>(State::Active));
  EXPECT_EQ(from_device(t.kernels), 15u) << "3 rounds of 5 kernels";
  EXPECT_EQ(from_device(t.copies), 12u) << "3 rounds of 3 loads and 1 download";
  EXPECT_EQ(from_device(t.memsets), 12u);
  expect_linked_to_calls(t, t.kernels);
  expect_linked_to_calls(t, t.copies);
  expect_linked_to_calls(t, t.memsets);
  const auto a = run({gpuscope_exe(), "analyze", trace_path_});
  EXPECT_NE(a.out.find("(device timestamps)"), std::string::npos) << a.out;
}

// CUPTI's MEMORY2 and SYNCHRONIZATION records repeat the allocations,
// frees and waits the hooks record. Each names its call, and the analysis
// counts the program's allocations once (the real H200 trace of
// alloc_churn read twice its cudaMalloc calls before the model dropped
// CUPTI's copies).
TEST_F(DeviceActivityTest, OnTheSimulatedCuptiAllocationsAndWaitsAreLinkedAndCountedOnce) {
  if (!std::filesystem::exists(bin("alloc_churn"))) GTEST_SKIP() << "samples not built";
  const auto r = gpuscope_run({bin("alloc_churn"), "--iters", "40"}, simulated_cupti());
  ASSERT_EQ(r.exit_code(), 0) << r.err;
  const auto t = only_trace();
  EXPECT_EQ(from_device(t.allocs), 82u) << "40 buffers and the summary, each allocated and freed";
  EXPECT_GE(from_device(t.syncs), 1u) << "the final cudaDeviceSynchronize";
  expect_linked_to_calls(t, t.allocs);
  expect_linked_to_calls(t, t.syncs);
  const auto a = run({gpuscope_exe(), "analyze", "--json", trace_path_}, clean_env());
  const auto json = nlohmann::json::parse(a.out, nullptr, false);
  ASSERT_FALSE(json.is_discarded()) << a.out << a.err;
  EXPECT_EQ(json["metrics"]["allocs"], 41) << "one per cudaMalloc";
  EXPECT_EQ(json["metrics"]["frees"], 41) << "one per cudaFree";
}

TEST_F(DeviceActivityTest, OnTheSimulatedCuptiEachEventWaitIsADeviceSyncRecordOfItsCall) {
  if (!std::filesystem::exists(bin("cpu_bound"))) GTEST_SKIP() << "samples not built";
  const auto r = gpuscope_run({bin("cpu_bound"), "--batches", "20", "--items", "4096", "--fixed"}, simulated_cupti());
  ASSERT_EQ(r.exit_code(), 0) << r.err;
  const auto t = only_trace();
  size_t event_waits = 0;
  for (const auto& s : t.syncs)
    if (s.source() == fb::Source::Device && s.kind() == fb::SyncKind::Event) ++event_waits;
  EXPECT_EQ(event_waits, 20u) << "one cudaEventSynchronize per batch";
  expect_linked_to_calls(t, t.syncs);
}

// CUDA starts before the first cudaProfilerStart: each window's device work
// is recorded, and nothing of what runs between windows.
TEST_F(DeviceActivityTest, OnTheSimulatedCuptiACaptureRangeHoldsExactlyItsWindowsDeviceWork) {
  if (!std::filesystem::exists(bin("profiled_phases"))) GTEST_SKIP() << "samples not built";
  const auto r = gpuscope_run(phases_run({"--capture-range", "cudaProfilerApi", "--capture-range-end", "repeat"}),
                              simulated_cupti());
  ASSERT_EQ(r.exit_code(), 0) << r.err;
  const auto t = only_trace();
  ASSERT_TRUE(t.summary.device_collection.has_value());
  EXPECT_EQ(t.summary.device_collection->state, static_cast<uint8_t>(State::Active));
  EXPECT_EQ(from_device(t.kernels), 15u) << "the profiled kernels";
  EXPECT_EQ(from_device(t.copies), 3u) << "one download per window, none of the loads";
  EXPECT_EQ(from_device(t.memsets), 0u) << "the clears run between windows";
  expect_linked_to_calls(t, t.kernels);
  expect_linked_to_calls(t, t.copies);
}

#ifdef GPUSCOPE_TEST_CUPTI_LIBRARY
// The real libcupti without a driver answers cuptiGetVersion but refuses
// to subscribe (CUPTI_ERROR_UNKNOWN): one stderr line, host-only capture,
// the program's output and exit status untouched; a second call is a no-op.
TEST_F(DeviceActivityTest, InjectionWithoutADriverDegradesToHostOnly) {
  const auto r = gpuscope_run({bin("behave"), "inject", "inject", "out:done", "exit:3"},
                              {std::string("GPUSCOPE_CUPTI_PATH=") + GPUSCOPE_TEST_CUPTI_LIBRARY});
  EXPECT_EQ(r.exit_code(), 3) << r.err;
  EXPECT_EQ(r.out, "inject:1\ninject:1\ndone\n");
  EXPECT_LE(count_lines_with(r.err, "gpuscope:"), 1) << r.err;
  const auto t = only_trace();
  ASSERT_TRUE(t.summary.device_collection.has_value());
  const auto& d = *t.summary.device_collection;
  EXPECT_NE(d.state, static_cast<uint8_t>(State::Active));
  EXPECT_NE(d.state, static_cast<uint8_t>(State::NotInjected)) << "the injection was seen";
  EXPECT_EQ(d.cupti_path, GPUSCOPE_TEST_CUPTI_LIBRARY);
  EXPECT_GT(d.cupti_version, 130000u);
  EXPECT_FALSE(d.reason.empty());
}
#endif

}  // namespace
}  // namespace gpuscope::test
