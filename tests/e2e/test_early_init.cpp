// libgpuscope.so's entry points before, during and after its own
// constructors (issue 16, item 1). The dynamic loader initializes a
// program's DT_NEEDED libraries before a preloaded one, so a library whose
// constructor looks up or calls CUDA (libcublasLt does) reaches the dlsym
// override and the hooks before any of gpuscope's static initializers would
// have run. The program must behave exactly as without gpuscope, and what it
// did must be in the trace.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "e2e_support.h"

namespace gpuscope::test {
namespace {

std::vector<std::string> simgpu_env(std::vector<std::string> extra) {
  extra.push_back("LD_LIBRARY_PATH=" + std::string(GPUSCOPE_SIMGPU_LIB_DIR));
  return extra;
}

struct Compared {
  ProcessResult plain;
  ProcessResult traced;
  TraceContents trace;
  size_t traces = 0;
};

// early_user with EARLY_ACTIONS=actions, plain and with the library preloaded.
Compared run_both(const std::string& program, const std::string& actions, std::vector<std::string> traced_extra = {}) {
  Compared c;
  const std::vector<std::string> argv = {bin(program)};
  c.plain = run(argv, environment_with(simgpu_env({"EARLY_ACTIONS=" + actions}),
                                       {"LD_PRELOAD", "GPUSCOPE_OUTPUT", "CUDA_INJECTION64_PATH"}));
  TempDir dir;
  traced_extra.push_back("EARLY_ACTIONS=" + actions);
  c.traced = run(argv, preload_env(dir.path() + "/", simgpu_env(traced_extra)));
  const auto traces = traces_in(dir.path());
  c.traces = traces.size();
  if (traces.size() == 1) c.trace = read_trace_file(traces.front());
  return c;
}

void expect_same_program(const Compared& c) {
  EXPECT_EQ(c.traced.status, c.plain.status) << c.traced.err;
  EXPECT_EQ(c.traced.out, c.plain.out) << c.traced.err;
  EXPECT_EQ(c.plain.exit_code(), 0) << c.plain.err;
  ASSERT_EQ(c.traces, 1u) << c.traced.err;
  ASSERT_TRUE(c.trace.summary.end.has_value()) << c.traced.err;
  EXPECT_EQ(c.trace.summary.end->kind, fb::EndKind::ReturnFromMain);
  // The program unloads nothing; neither may gpuscope's own lookups.
  for (const auto& load : c.trace.summary.loads) EXPECT_FALSE(load.unload) << load.path;
}

// The plain run printed `text` (the traced one printed the same).
void expect_printed(const Compared& c, const std::string& text) {
  EXPECT_NE(c.plain.out.find(text), std::string::npos) << c.plain.out;
}

class EarlyInit : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!simgpu_built()) GTEST_SKIP() << "simgpu not built";
  }
};

TEST_F(EarlyInit, LookupsFromConstructorsBeforeOursAnswerAsWithoutGpuscope) {
  const Compared c = run_both("early_user", "lookup");
  expect_same_program(c);
  // The program's own lookups: neither library is loaded yet, so nothing is
  // found, exactly as without gpuscope (its exports are not the functions).
  expect_printed(c, "ctor101: dlsym(RTLD_DEFAULT, cuInit): absent");
}

TEST_F(EarlyInit, RuntimeDlopenedAndCalledFromConstructorsIsTraced) {
  const Compared c = run_both("early_user", "runtime");
  expect_same_program(c);
  expect_printed(c, "ctor_default: cudaGetDeviceCount 0 (1 devices), cudaMalloc 0, cudaFree 0");
  // Capture starts at the first hooked call, inside the first constructor.
  EXPECT_EQ(calls(c.trace, "cudaGetDeviceCount"), 2u);
  EXPECT_EQ(calls(c.trace, "cudaMalloc"), 2u);
  EXPECT_EQ(calls(c.trace, "cudaFree"), 2u);
}

TEST_F(EarlyInit, DriverHandleLookupsFromConstructorsAreHookedAndTraced) {
  const Compared c = run_both("early_user", "lookup,driver");
  expect_same_program(c);
  expect_printed(c, "ctor101: cuInit through libcuda.so.1's handle: 0 (errno 77, dlerror none)");
  EXPECT_EQ(calls(c.trace, "cuInit"), 2u);
}

// A thread a constructor starts makes CUDA calls while libgpuscope.so's
// constructors run on the main thread: whichever gets there first starts
// capture, calls that arrive while it is starting pass through unrecorded.
TEST_F(EarlyInit, ThreadStartedByAConstructorRacesOurConstructors) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    const Compared c = run_both("early_user", "thread");
    expect_same_program(c);
    expect_printed(c, "ctor101: worker made 200 rounds, 0 failures");
    EXPECT_LE(calls(c.trace, "cudaMalloc"), 400u);
    EXPECT_LE(calls(c.trace, "cudaFree"), 400u);
    EXPECT_EQ(c.trace.summary.stats.frames_corrupt, 0u);
  }
}

// The CUDA driver calls InitializeInjection in CUDA_INJECTION64_PATH at CUDA
// initialization, which a library's constructor may reach before ours: the
// same file as the preloaded one is the same instance.
TEST_F(EarlyInit, InjectionIntoThePreloadedLibraryFromAConstructor) {
  const Compared c = run_both("early_user", "inject,runtime", {"CUDA_INJECTION64_PATH=" + capture_library()});
  EXPECT_EQ(c.traced.exit_code(), 0) << c.traced.err;
  ASSERT_EQ(c.traces, 1u) << c.traced.err;
  ASSERT_TRUE(c.trace.summary.end.has_value());
  // Plain, no injection library is named (-1); traced, gpuscope's answers 1.
  std::string expected = c.plain.out;
  for (size_t at; (at = expected.find("InitializeInjection: -1")) != std::string::npos;)
    expected.replace(at, 23, "InitializeInjection: 1");
  EXPECT_EQ(c.traced.out, expected);
  EXPECT_EQ(calls(c.trace, "cudaMalloc"), 2u);
}

// libcublasLt's constructor looks up cuInit with dlsym whenever libcuda.so.1
// is loadable: every program linking cuBLAS died of SIGSEGV under gpuscope.
// cublasCreate fails on simgpu (no private export tables), the same way
// traced or not.
TEST_F(EarlyInit, ProgramLinkingCublasBehavesAsWithoutGpuscope) {
  if (!std::filesystem::exists(bin("cublas_user"))) GTEST_SKIP() << "the toolkit has no cuBLAS";
  const Compared c = run_both("cublas_user", "");
  EXPECT_TRUE(c.plain.exited()) << c.plain.err;
  EXPECT_EQ(c.traced.status, c.plain.status) << c.traced.err;
  EXPECT_EQ(c.traced.out, c.plain.out);
  ASSERT_EQ(c.traces, 1u) << c.traced.err;
  EXPECT_TRUE(c.trace.summary.end.has_value());
}

// What makes the above hold by construction: no source file of
// libgpuscope.so has a dynamic initializer (every table an entry point reads
// is constant-initialized, or built on first use). The only ones left are
// the static C++ runtime's own (.cc files).
TEST(EarlyInitTables, NoGpuscopeSourceFileHasADynamicInitializer) {
  const ProcessResult nm = run({GPUSCOPE_NM, capture_library()}, environment_with({}));
  ASSERT_EQ(nm.exit_code(), 0) << nm.err;
  std::istringstream lines(nm.out);
  std::vector<std::string> ours;
  size_t runtime_initializers = 0;
  for (std::string line; std::getline(lines, line);) {
    const size_t at = line.find("_GLOBAL__sub_I_");
    if (at == std::string::npos) continue;
    if (line.ends_with(".cc")) ++runtime_initializers;
    else ours.push_back(line.substr(at));
  }
  EXPECT_GT(runtime_initializers, 0u) << "nm output not understood (stripped library?)";
  EXPECT_TRUE(ours.empty()) << "dynamically initialized: " << ::testing::PrintToString(ours);
}

}  // namespace
}  // namespace gpuscope::test
