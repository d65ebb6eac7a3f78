// The dlopen/dlclose/dlerror hooks on a real program: a Python interpreter
// driving libc's dl* functions through ctypes. The program must see exactly
// what it sees without gpuscope (dlerror() texts, errno, which loads work,
// "$ORIGIN" relative to the real caller), and the trace must hold every GPU
// library load and unload with its outcome.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <algorithm>
#include <fstream>

#include "e2e_support.h"

namespace gpuscope::test {
namespace {

// argv[1]: simgpu's library directory.
constexpr const char* kScript = R"PY(
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
dlopen = libc.dlopen; dlopen.restype = ctypes.c_void_p; dlopen.argtypes = [ctypes.c_char_p, ctypes.c_int]
dlerror = libc.dlerror; dlerror.restype = ctypes.c_char_p; dlerror.argtypes = []
dlsym = libc.dlsym; dlsym.restype = ctypes.c_void_p; dlsym.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
dlclose = libc.dlclose; dlclose.restype = ctypes.c_int; dlclose.argtypes = [ctypes.c_void_p]
RTLD_NOW, RTLD_DEEPBIND = 2, 8

def err():
    ctypes.set_errno(0)
    text = dlerror()
    return text, ctypes.get_errno()

h = dlopen(b"libcudnn_gpuscope_missing.so.9", RTLD_NOW)
print("missing", h, *err())
print("read twice", *err())
dlopen(b"libcudnn_gpuscope_missing.so.9", RTLD_NOW)
print("dlsym ok", dlsym(None, b"printf") is not None)
print("cleared by the dlsym", *err())
dlopen(b"libcudnn_gpuscope_missing.so.9", RTLD_NOW)
dlopen(b"libnot_a_gpu_library_gpuscope.so", RTLD_NOW)
print("later failure wins", *err())
dlopen(b"libcudnn_gpuscope_missing.so.9", RTLD_NOW)
h = dlopen(None, RTLD_NOW)
print("cleared by a dlopen", *err())
h = dlopen((sys.argv[1] + "/libnvidia-ml.so.1").encode(), RTLD_NOW | RTLD_DEEPBIND)
print("deepbind", h is not None, *err())
print("close", dlclose(h), *err())
import _ctypes
where = os.path.dirname(getattr(_ctypes, "__file__", sys.executable))
siblings = sorted(f for f in os.listdir(where) if f.endswith(".so") and not f.startswith("_ctypes."))
if siblings:
    ctypes.CDLL("$ORIGIN/" + siblings[0])
    print("$ORIGIN is the caller's directory")
try:
    ctypes.CDLL("$ORIGIN/libcublas_gpuscope_missing.so.13")
except OSError as e:
    print("origin missing", e)
)PY";

class LoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The interpreter itself: `python3` may be a wrapper script that would
    // leave a trace per process.
    const auto r = run({"python3", "-c", "import sys; print(sys.executable)"}, clean_env());
    if (r.exit_code() != 0 || r.out.empty()) GTEST_SKIP() << "no python3 here";
    python_ = r.out.substr(0, r.out.find('\n'));
    script_ = dir_.file("dl.py");
    std::ofstream(script_) << kScript;
  }

  ProcessResult run_script(const std::vector<std::string>& env) {
    return run({python_, script_, GPUSCOPE_SIMGPU_LIB_DIR}, env);
  }

  const container::LibraryLoadEvent* find_load(const TraceContents& t, const std::string& path, bool unload,
                                             size_t nth = 0) {
    for (const auto& l : t.summary.loads)
      if (l.path == path && l.unload == unload && nth-- == 0) return &l;
    return nullptr;
  }

  TempDir dir_;
  std::string python_, script_;
};

TEST_F(LoaderTest, TheProgramSeesExactlyWhatItSeesWithoutGpuscope) {
  const auto plain = run_script(clean_env());
  ASSERT_EQ(plain.exit_code(), 0) << plain.err;
  ASSERT_NE(plain.out.find("missing None b'libcudnn_gpuscope_missing.so.9: cannot open shared object file: No "
                           "such file or directory' 2"),
            std::string::npos)
      << plain.out;
  TempDir out;
  const auto traced = run_script(preload_env(out.path() + "/"));
  EXPECT_EQ(traced.out, plain.out);
  EXPECT_EQ(traced.err, plain.err);
  EXPECT_EQ(traced.status, plain.status);
}

TEST_F(LoaderTest, GpuLibraryLoadsAreRecordedWithTheirOutcome) {
  TempDir out;
  const auto traced = run_script(preload_env(out.path() + "/"));
  ASSERT_EQ(traced.exit_code(), 0) << traced.err;
  const auto traces = traces_in(out.path());
  ASSERT_EQ(traces.size(), 1u);
  const TraceContents t = read_trace_file(traces[0]);

  const std::string missing_error =
      "libcudnn_gpuscope_missing.so.9: cannot open shared object file: No such file or directory";
  for (size_t i = 0; i < 4; ++i) {
    const auto* failed = find_load(t, "libcudnn_gpuscope_missing.so.9", false, i);
    ASSERT_NE(failed, nullptr) << i;
    EXPECT_FALSE(failed->ok);
    EXPECT_EQ(failed->error, missing_error);
    EXPECT_EQ(failed->flags, RTLD_NOW);
    EXPECT_GT(failed->tid, 0u);
  }
  EXPECT_EQ(find_load(t, "libcudnn_gpuscope_missing.so.9", false, 4), nullptr);
  EXPECT_EQ(find_load(t, "libnot_a_gpu_library_gpuscope.so", false), nullptr) << "not a GPU library";

  const std::string nvml = std::string(GPUSCOPE_SIMGPU_LIB_DIR) + "/libnvidia-ml.so.1";
  const auto* loaded = find_load(t, nvml, false);
  ASSERT_NE(loaded, nullptr);
  EXPECT_TRUE(loaded->ok);
  EXPECT_EQ(loaded->resolved_path, nvml);
  EXPECT_TRUE(loaded->deepbind_stripped);
  EXPECT_EQ(loaded->flags, RTLD_NOW | RTLD_DEEPBIND);
  const auto* unloaded = find_load(t, nvml, true);
  ASSERT_NE(unloaded, nullptr);
  EXPECT_TRUE(unloaded->ok);
  EXPECT_GE(unloaded->start_ns, loaded->start_ns);

  // Entered through glibc directly ($ORIGIN is the caller's): the failure
  // is recorded from the text the program read with dlerror().
  const auto* origin = find_load(t, "$ORIGIN/libcublas_gpuscope_missing.so.13", false);
  ASSERT_NE(origin, nullptr);
  EXPECT_FALSE(origin->ok);
  EXPECT_NE(origin->error.find("libcublas_gpuscope_missing.so.13: cannot open shared object file"),
            std::string::npos)
      << origin->error;
}

TEST_F(LoaderTest, InfoListsGpuLibraryLoads) {
  TempDir out;
  ASSERT_EQ(run_script(preload_env(out.path() + "/")).exit_code(), 0);
  const auto traces = traces_in(out.path());
  ASSERT_EQ(traces.size(), 1u);
  const auto r = run({gpuscope_exe(), "info", traces[0]}, clean_env());
  EXPECT_EQ(r.exit_code(), 0) << r.err;
  EXPECT_NE(r.out.find("gpu libs:    LOAD FAILED libcudnn_gpuscope_missing.so.9: libcudnn_gpuscope_missing.so.9: "
                       "cannot open shared object file"),
            std::string::npos)
      << r.out;
  // The script tries the missing cuDNN four times in a row (the loads between are not GPU libraries): one line.
  EXPECT_NE(r.out.find("No such file or directory (4 times)\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(RTLD_DEEPBIND removed)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("unloaded " + std::string(GPUSCOPE_SIMGPU_LIB_DIR) + "/libnvidia-ml.so.1"), std::string::npos)
      << r.out;
}

// churn_host over `plugin`, plain and then traced: the plain run must work,
// move the runtime twice and say `plain_says`; the traced one must exit 0
// with the same output. Returns the traced run's trace.
TraceContents churn_plain_then_traced(const std::string& plugin, const std::vector<std::string>& env,
                                      const std::string& plain_says) {
  const auto plain = run({bin("churn_host"), plugin}, env);
  if (plain.exit_code() != 0 || plain.out.find("the runtime moved 2 time(s)") == std::string::npos ||
      plain.out.find(plain_says) == std::string::npos) {
    ADD_FAILURE() << "the plain run: " << plain.out << plain.err;
    return {};
  }
  TempDir dir;
  const auto traced = run({gpuscope_exe(), "run", "-q", "-o", dir.path(), "--", bin("churn_host"), plugin}, env);
  EXPECT_EQ(traced.exit_code(), 0) << traced.err;
  EXPECT_EQ(traced.out, plain.out);
  const auto traces = traces_in(dir.path());
  if (traces.empty()) {
    ADD_FAILURE() << "no trace";
    return {};
  }
  return read_trace_file(traces[0]);
}

// A plugin host (churn_host) loading a plugin that links the CUDA runtime,
// calling it and unloading it, three times, the runtime mapped somewhere
// else each time: every round works as without gpuscope (the hooks forget
// the unloaded runtime's functions instead of jumping into them) and every
// round's calls are in the trace. The runtime is the plugin's dependency,
// never dlopen'ed itself: what gpuscope asks of it (its version, for a
// batched copy's parameters) goes through a handle of its own.
TEST(LoaderChurn, ARuntimeUnloadedAndLoadedElsewhereIsCalledWhereItIsNow) {
  const auto env = environment_with({std::string("LD_LIBRARY_PATH=") + GPUSCOPE_SIMGPU_LIB_DIR},
                                    {"LD_PRELOAD", "GPUSCOPE_OUTPUT"});
  const TraceContents t = churn_plain_then_traced(GPUSCOPE_CHURN_PLUGIN, env, "the runtime moved 2 time(s)");
  EXPECT_EQ(calls(t, "cudaGetDeviceCount"), 3u);
  EXPECT_EQ(calls(t, "cudaMalloc"), 3u);
  EXPECT_EQ(calls(t, "cudaMemcpyBatchAsync"), 3u);
}

// The same with a plugin built against CUDA 12 (a stand-in libcudart.so.12):
// its calls go through the hooks' libcudart.so.12 aliases, whose real
// functions are forgotten on unload as the default ones are.
TEST(LoaderChurn, AnOlderRuntimeUnloadedAndLoadedElsewhereToo) {
  const auto env = environment_with({}, {"LD_PRELOAD", "GPUSCOPE_OUTPUT", "LD_LIBRARY_PATH"});
  const TraceContents t = churn_plain_then_traced(GPUSCOPE_RUNTIME_PLUGIN12, env, "round 2: plugin_work 12080");
  EXPECT_EQ(calls(t, "cudaRuntimeGetVersion"), 3u);
}

// Another interposer preloaded after gpuscope (a GPU-sharing layer such as
// HAMi-core's, which overrides dlsym and wraps driver functions): a program
// that links the driver and one that finds it with dlsym, as the CUDA
// runtime does, both still reach its wrapper through gpuscope, as without
// gpuscope, and the trace has their calls.
TEST(LoaderChurn, AnotherInterposerAfterGpuscopeStaysInTheCallChain) {
  const auto env = environment_with({std::string("LD_LIBRARY_PATH=") + GPUSCOPE_SIMGPU_LIB_DIR,
                                     std::string("LD_PRELOAD=") + GPUSCOPE_OTHER_INTERPOSER},
                                    {"GPUSCOPE_OUTPUT"});
  for (const char* program : {"array_driver_user", "dlsym_driver_user"}) {
    const auto plain = run({bin(program)}, env);
    ASSERT_EQ(plain.exit_code(), 0) << program << plain.err;
    ASSERT_EQ(count_lines_with(plain.err, "other interposer: cuMemAlloc_v2"), 1) << program << plain.err;
    ASSERT_EQ(plain.out.find(" 999\n"), std::string::npos) << "the interposer reached the driver: " << plain.out;
    TempDir dir;
    const auto traced = run({gpuscope_exe(), "run", "-q", "-o", dir.path(), "--", bin(program)}, env);
    EXPECT_EQ(traced.exit_code(), 0) << program << traced.err;
    EXPECT_EQ(traced.out, plain.out) << program;
    EXPECT_EQ(count_lines_with(traced.err, "other interposer: cuMemAlloc_v2"), 1) << program << traced.err;
    EXPECT_EQ(calls(read_trace_file(traces_in(dir.path()).at(0)), "cuMemAlloc_v2"), 1u) << program;
  }
}

}  // namespace
}  // namespace gpuscope::test
