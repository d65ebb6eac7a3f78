// Two copies of libgpuscope.so in one process (issue 16, item 7): another
// path, another version, preloaded twice in either order, preloaded and
// injected, or preloaded by the service's environment under `gpuscope run`.
// The first copy loaded traces as if it were alone; every other copy stands
// down with one line on stderr, records nothing, writes no file, and hands
// whatever reaches it (its hooks, its injection entry points) to the first.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "e2e_support.h"
#include "gpuscope_version.h"

namespace gpuscope::test {
namespace {

namespace fs = std::filesystem;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class TwoInstances : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!simgpu_built()) GTEST_SKIP() << "simgpu not built";
    fs::create_directories(dir_.path() + "/copy");
    fs::create_directories(dir_.path() + "/out");
    fs::copy_file(capture_library(), copy_);
    // Another version: the same build with every digit of its version
    // string turned into 9 (the marker names the version it was built as).
    std::string bytes = slurp(capture_library());
    const std::string version = std::string(1, '\0') + GPUSCOPE_VERSION_STRING + '\0';
    other_version_ = GPUSCOPE_VERSION_STRING;
    for (char& c : other_version_)
      if (c >= '0' && c <= '8') c = '9';
    ASSERT_NE(other_version_, GPUSCOPE_VERSION_STRING);
    size_t replaced = 0;
    for (size_t at = 0; (at = bytes.find(version, at)) != std::string::npos; at += version.size(), ++replaced)
      bytes.replace(at + 1, other_version_.size(), other_version_);
    ASSERT_GT(replaced, 0u);
    std::ofstream(other_, std::ios::binary) << bytes;
  }

  std::vector<std::string> env(std::vector<std::string> extra) const {
    extra.push_back("LD_LIBRARY_PATH=" + std::string(GPUSCOPE_SIMGPU_LIB_DIR));
    return environment_with(extra, {"LD_PRELOAD", "GPUSCOPE_OUTPUT", "GPUSCOPE_RUN_ID", "GPUSCOPE_ROOT_PID",
                                    "GPUSCOPE_PARENT_PID", "GPUSCOPE_MODE", "CUDA_INJECTION64_PATH",
                                    "NVTX_INJECTION64_PATH"});
  }
  ProcessResult plain(const std::vector<std::string>& argv, std::vector<std::string> extra = {}) const {
    return run(argv, env(std::move(extra)));
  }
  // The output directory's one trace (fails the test when there are more).
  // None of the programs here unloads a library: neither may gpuscope's
  // look at the loaded objects.
  TraceContents only_trace() const {
    const auto traces = traces_in(dir_.path() + "/out");
    EXPECT_EQ(traces.size(), 1u);
    TraceContents t = traces.size() == 1 ? read_trace_file(traces.front()) : TraceContents{};
    for (const auto& load : t.summary.loads) EXPECT_FALSE(load.unload) << load.path;
    return t;
  }
  std::string out() const { return dir_.path() + "/out/"; }

  TempDir dir_;
  const std::string copy_ = dir_.path() + "/copy/libgpuscope.so";
  const std::string other_ = dir_.path() + "/libgpuscope-other.so";
  std::string other_version_;
};

// One line, from the copy standing down, naming both copies and versions.
void expect_one_stand_down_line(const std::string& err, const std::string& first, const std::string& second,
                                const std::string& second_version = GPUSCOPE_VERSION_STRING) {
  EXPECT_EQ(count_lines_with(err, "gpuscope:"), 1) << err;
  EXPECT_EQ(count_lines_with(err, "another libgpuscope.so is loaded (" + first + ", version "), 1) << err;
  EXPECT_EQ(count_lines_with(err, "this copy (" + second + ", version " + second_version + ") stands down"), 1)
      << err;
}

TEST_F(TwoInstances, TheIssuesRepro) {
  const ProcessResult r = run({"/bin/true"}, env({"LD_PRELOAD=" + capture_library() + ":" + copy_,
                                                   "GPUSCOPE_OUTPUT=" + out()}));
  EXPECT_EQ(r.status, 0) << r.err;
  expect_one_stand_down_line(r.err, capture_library(), copy_);
  EXPECT_EQ(traces_in(out()).size(), 1u);
}

// Both programs: early_user reaches the runtime through dlopen and dlsym,
// cudart_user links it, so the first copy's hooks find the real functions
// after the second copy in the scope.
TEST_F(TwoInstances, PreloadedTwiceInEitherOrderTheFirstTraces) {
  struct Pair {
    std::string first, second, second_version;
  };
  for (const std::string program : {"early_user", "cudart_user"}) {
    const std::vector<std::string> argv = {bin(program)};
    const ProcessResult reference = plain(argv, {"EARLY_ACTIONS=runtime"});
    ASSERT_EQ(reference.exit_code(), 0) << reference.err;
    const uint64_t n = program == "early_user" ? 2 : 1;
    for (const Pair& p : {Pair{capture_library(), copy_, GPUSCOPE_VERSION_STRING},
                          Pair{copy_, capture_library(), GPUSCOPE_VERSION_STRING},
                          Pair{capture_library(), other_, other_version_},
                          Pair{other_, capture_library(), GPUSCOPE_VERSION_STRING}}) {
      SCOPED_TRACE(program + " under " + p.first + ":" + p.second);
      const ProcessResult r = run(argv, env({"LD_PRELOAD=" + p.first + ":" + p.second, "GPUSCOPE_OUTPUT=" + out(),
                                             "EARLY_ACTIONS=runtime"}));
      EXPECT_EQ(r.status, reference.status);
      EXPECT_EQ(r.out, reference.out);
      expect_one_stand_down_line(r.err, p.first, p.second, p.second_version);
      const TraceContents t = only_trace();
      ASSERT_TRUE(t.summary.end.has_value());
      EXPECT_EQ(t.summary.end->kind, fb::EndKind::ReturnFromMain);
      EXPECT_EQ(calls(t, "cudaGetDeviceCount"), n);
      EXPECT_EQ(calls(t, "cudaMalloc"), n);
      EXPECT_EQ(calls(t, "cudaFree"), n);
      for (const auto& path : traces_in(out())) fs::remove(path);
    }
  }
}

// The CUDA driver dlopens CUDA_INJECTION64_PATH (here another copy) and
// calls its InitializeInjection: the copy hands it to the preloaded one,
// which starts device collection (here it fails for want of a driver, and
// says so, rather than "never injected").
TEST_F(TwoInstances, AnInjectedCopyHandsInitializeInjectionToThePreloadedOne) {
  const ProcessResult r = run({bin("early_user")}, env({"LD_PRELOAD=" + capture_library(), "GPUSCOPE_OUTPUT=" + out(),
                                                        "CUDA_INJECTION64_PATH=" + copy_,
                                                        "EARLY_ACTIONS=inject,runtime"}));
  EXPECT_EQ(r.exit_code(), 0) << r.err;
  EXPECT_EQ(count_lines_with(r.out, ": InitializeInjection: 1"), 2) << r.out;
  EXPECT_EQ(count_lines_with(r.err, "stands down"), 1) << r.err;
  const TraceContents t = only_trace();
  ASSERT_TRUE(t.summary.device_collection.has_value());
  EXPECT_NE(t.summary.device_collection->state, static_cast<uint8_t>(fb::DeviceCollectionState::NotInjected))
      << t.summary.device_collection->reason;
  EXPECT_EQ(calls(t, "cudaMalloc"), 2u);
}

// NVTX_INJECTION64_PATH naming another copy: its InitializeInjectionNvtx2
// installs the preloaded copy's handlers, whose trace gets the ranges.
TEST_F(TwoInstances, AnNvtxInjectedCopyInstallsThePreloadedOnesHandlers) {
  const ProcessResult r = run({bin("nvtx_inject_twice")}, env({"LD_PRELOAD=" + capture_library(),
                                                               "GPUSCOPE_OUTPUT=" + out(),
                                                               "NVTX_INJECTION64_PATH=" + copy_}));
  EXPECT_EQ(r.exit_code(), 0) << r.out << r.err;
  EXPECT_EQ(r.out, "ok\n");
  EXPECT_EQ(count_lines_with(r.err, "stands down"), 1) << r.err;
  const TraceContents t = only_trace();
  EXPECT_EQ(std::count_if(t.markers.begin(), t.markers.end(),
                          [](const fb::Marker& m) { return m.kind() == fb::MarkerKind::RangePush; }),
            1);
}

// dlsym of a copy's own handle gives that copy's hook: it passes the call to
// the preloaded copy's hook, which records it once and reaches the runtime.
TEST_F(TwoInstances, ACopysHookReachedThroughItsHandlePassesTheCallOn) {
  const ProcessResult r = run({bin("early_user")}, env({"LD_PRELOAD=" + capture_library(), "GPUSCOPE_OUTPUT=" + out(),
                                                        "EARLY_COPY=" + copy_, "EARLY_ACTIONS=runtime,copy"}));
  EXPECT_EQ(r.exit_code(), 0) << r.err;
  EXPECT_EQ(count_lines_with(r.out, "cudaGetDeviceCount through another copy's handle: 0 (1 devices)"), 2) << r.out;
  const TraceContents t = only_trace();
  EXPECT_EQ(calls(t, "cudaGetDeviceCount"), 4u);
}

// A service whose environment already preloads a copy, under `gpuscope run`:
// the CLI puts its own library first.
TEST_F(TwoInstances, RunOnAProgramThatAlreadyPreloadsACopy) {
  const ProcessResult reference = plain({bin("early_user")}, {"EARLY_ACTIONS=runtime"});
  const ProcessResult r = run({gpuscope_exe(), "run", "-q", "-o", out(), "--", bin("early_user")},
                              env({"LD_PRELOAD=" + other_, "EARLY_ACTIONS=runtime"}));
  EXPECT_EQ(r.status, reference.status) << r.err;
  EXPECT_EQ(r.out, reference.out);
  expect_one_stand_down_line(r.err, capture_library(), other_, other_version_);
  const TraceContents t = only_trace();
  EXPECT_EQ(calls(t, "cudaMalloc"), 2u);
}

// The same in standby: one control socket (the first copy's), an attach
// gives one trace, and nothing else is written.
TEST_F(TwoInstances, StandbyOnAProgramThatAlreadyPreloadsACopy) {
  if (!fs::exists(bin("service_loop"))) GTEST_SKIP() << "samples not built";
  const std::string ctl = dir_.path() + "/ctl";
  const std::vector<std::string> service = {bin("service_loop"), "--seconds", "2"};
  const Spawned reference = spawn(service, env({}));
  std::vector<std::string> argv = {gpuscope_exe(), "run", "--standby", "-q", "-o", out(), "--"};
  argv.insert(argv.end(), service.begin(), service.end());
  const Spawned s = spawn(argv, env({"LD_PRELOAD=" + copy_, "GPUSCOPE_CONTROL_DIR=" + ctl}));
  std::vector<std::string> sockets;
  for (int i = 0; i < 500 && sockets.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(ctl, ec))
      if (e.path().extension() == ".sock") sockets.push_back(e.path().stem().string());
  }
  ASSERT_EQ(sockets.size(), 1u);
  const std::string attached = dir_.path() + "/attached.gpuscope";
  // The socket file appears at bind(), a moment before the process listens.
  ProcessResult a;
  for (int i = 0; i < 100; ++i) {
    a = run({gpuscope_exe(), "attach", sockets.front(), "--duration", "0.3", "-o", attached},
            env({"GPUSCOPE_CONTROL_DIR=" + ctl}));
    if (a.err.find("cannot connect") == std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(a.exit_code(), 0) << a.err;
  const ProcessResult r = finish(s), plain_run = finish(reference);
  ASSERT_EQ(plain_run.exit_code(), 0) << plain_run.err;
  EXPECT_EQ(r.status, plain_run.status) << r.err;
  EXPECT_EQ(r.out, plain_run.out);
  expect_one_stand_down_line(r.err, capture_library(), copy_);
  EXPECT_TRUE(traces_in(out()).empty());
  const TraceContents t = read_trace_file(attached);
  ASSERT_TRUE(t.summary.end.has_value()) << t.error;
  EXPECT_FALSE(t.api_calls.empty());
}

}  // namespace
}  // namespace gpuscope::test
