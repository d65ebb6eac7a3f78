// The verdict cases of docs/rules.md ("Verdict cases"), one test each:
// programs nobody wrote for gpuscope (system tools, a shell loop, Python,
// conformance programs in the style of the public samples) and the small
// programs of tests/verdicts/programs, each traced with `gpuscope run` and
// analyzed as a user would, with the class rules.md justifies and the words
// of evidence a user must see. Every process a case starts must get that
// class (a shell's children too). RUN_SERIAL, like the other verdict tests.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../e2e/e2e_support.h"

namespace gpuscope::test {
namespace {

using nlohmann::json;

enum class Runtime { None, Simgpu, RealNoDriver };

struct Case {
  const char* name;
  std::vector<std::string> argv;  // argv[0]: "@sample", "%conformance" or an absolute path / PATH name
  Runtime runtime;
  std::vector<std::string> env;   // NODE=<file in samples/simgpu/nodes or tests/verdicts/nodes>, VAR=value
  const char* expected;
  std::vector<const char*> report_has;      // in `gpuscope analyze`'s text
  std::vector<const char*> report_lacks = {};
};

// The case's name where GoogleTest would print its bytes: ctest's test names
// carry the parameter, and bytes (pointers) change with every build, which
// breaks `ctest --rerun-failed`.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::string program_path(const std::string& spec) {
  if (spec[0] == '@') return bin(spec.substr(1));
  if (spec[0] == '%') return std::string(GPUSCOPE_CONFORMANCE_DIR) + "/" + spec.substr(1);
  return spec;
}

std::string node_path(const std::string& file) {
  const std::string source = GPUSCOPE_SOURCE_DIR;
  for (const char* dir : {"/samples/simgpu/nodes/", "/tests/verdicts/nodes/"})
    if (std::filesystem::exists(source + dir + file)) return source + dir + file;
  return file;
}

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      // 1. No CUDA work is not a CPU fallback.
      {"true", {"/bin/true"}, Runtime::None, {}, "no_cuda_work", {"no GPU library loaded and no CUDA call made"}},
      {"ls", {"/bin/ls", "/"}, Runtime::None, {}, "no_cuda_work", {"no CUDA work"}, {"fallback"}},
      {"env", {"/usr/bin/env"}, Runtime::None, {}, "no_cuda_work", {"no CUDA work"}, {"fallback"}},
      {"shell_loop",
       {"/bin/sh", "-c", "i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done; ls / > /dev/null"},
       Runtime::None, {}, "no_cuda_work", {"no CUDA work"}, {"fallback"}},
      {"python_helper",
       {"/usr/bin/env", "python3", "-c", "print(sum(i * i for i in range(2000000)))"},
       Runtime::None, {}, "no_cuda_work", {"no CUDA work"}, {"fallback"}},
      {"hidden_devices_without_cuda", {"/bin/ls", "/"}, Runtime::None, {"CUDA_VISIBLE_DEVICES="}, "no_cuda_work",
       {"no CUDA work"}, {"fallback"}},
      // 2. A device query that succeeded, with no /dev/nvidia* (simgpu), is no fallback.
      {"device_query", {"%device_query"}, Runtime::Simgpu, {}, "no_cuda_work",
       {"CUDA call(s) made (", "none of which launched a kernel"}, {"fallback"}},
      // 3. Every failing outermost call is evidence, whatever its code.
      {"cpu_fallback_init_801", {"@cpu_fallback", "--rounds", "2"}, Runtime::Simgpu, {"NODE=init-not-supported.json"},
       "cpu_fallback", {"cudaGetDeviceCount returned cudaErrorNotSupported (801)", "carried on on the CPU"}},
      {"cpu_fallback_no_device", {"@cpu_fallback", "--rounds", "2"}, Runtime::Simgpu, {"NODE=no-device.json"},
       "cpu_fallback", {"cudaErrorNoDevice (100)"}},
      {"cpu_fallback_hidden_devices", {"@cpu_fallback", "--rounds", "2"}, Runtime::Simgpu, {"CUDA_VISIBLE_DEVICES="},
       "cpu_fallback", {"CUDA_VISIBLE_DEVICES='' hides every GPU"}},
      {"cpu_fallback_real_runtime_no_driver", {"@cpu_fallback", "--rounds", "2"}, Runtime::RealNoDriver, {},
       "cpu_fallback", {"cudaErrorInsufficientDriver (35)"}},
      // 4. Loud is not silent: the program asked for the GPU and died.
      {"vector_add_no_device", {"%vector_add", "--n=50000"}, Runtime::Simgpu, {"NODE=no-device.json"},
       "cuda_unavailable", {"CUDA unavailable; the program failed (exit status 1)", "cudaMalloc returned"},
       {"falling back silently"}},
      {"vector_add_real_runtime_no_driver", {"%vector_add", "--n=50000"}, Runtime::RealNoDriver, {},
       "cuda_unavailable", {"cudaErrorInsufficientDriver (35)", "the program failed"}},
      {"device_query_init_801", {"%device_query"}, Runtime::Simgpu, {"NODE=init-not-supported.json"},
       "cuda_unavailable", {"cudaErrorNotSupported (801)"}},
      {"gpu_probe_no_device", {"@gpu_probe"}, Runtime::Simgpu, {"NODE=no-device.json"}, "cuda_unavailable",
       {"the program failed (exit status"}},
      // 4b. A working CUDA that refused the program's request is not "CUDA unavailable": the fix is in the
      // program, not the driver.
      {"oversized_allocation", {"@cuda_errors", "--oversized"}, Runtime::Simgpu, {}, "cuda_error",
       {"VERDICT: failed on a CUDA error (exit status 1): cudaMalloc returned cudaErrorMemoryAllocation (2), "
        "confidence high",
        "CUDA found the GPU: cudaGetDeviceCount succeeded", "the GPU ran out of memory", "at main"},
       {"CUDA unavailable", "grant the process access", "allocator churn"}},
      {"launch_over_the_limit", {"@cuda_errors", "--too-many-threads"}, Runtime::Simgpu, {}, "cuda_error",
       {"cudaErrorInvalidConfiguration (9)", "at most 1024 threads per block"}, {"CUDA unavailable"}},
      {"oversized_allocation_then_cpu", {"@cuda_errors", "--oversized", "--cpu-fallback"}, Runtime::Simgpu, {},
       "cpu_fallback",
       {"VERDICT: silent CPU fallback: cudaMalloc returned cudaErrorMemoryAllocation (2), and the program carried on "
        "without the GPU and exited 0"},
       {"CUDA unavailable"}},
      // A run that worked, then stopped at its error: what it died of, before how it used the GPU.
      {"oversized_allocation_after_work", {"@cuda_errors", "--after-work", "--oversized"}, Runtime::Simgpu, {},
       "cuda_error",
       {"failed on a CUDA error: the program exited with status 1 after cudaMalloc returned "
        "cudaErrorMemoryAllocation (2)",
        "before it: 10 launches, 2 copies, 0 memsets and 1 allocations succeeded", "the GPU ran out of memory"},
       {"too short to judge"}},
      // ... while the same program where CUDA cannot start is.
      {"oversized_allocation_no_device", {"@cuda_errors", "--oversized"}, Runtime::Simgpu, {"NODE=no-device.json"},
       "cuda_unavailable", {"cudaErrorNoDevice (100)"}},
      {"oversized_allocation_real_runtime_no_driver", {"@cuda_errors", "--oversized"}, Runtime::RealNoDriver, {},
       "cuda_unavailable", {"cudaErrorInsufficientDriver (35)"}},
      // 5. Device-to-device copies are not PCIe.
      {"d2d_copies", {"@d2d_copies"}, Runtime::Simgpu, {}, "memory_bound",
       {"200 device-to-device copies (6400.0 MiB)", "none crossed the host's PCIe link"}, {"PCIe-bound"}},
      // 7. Short runs: too short to judge, context creation is initialization.
      {"vector_add_short", {"%vector_add", "--n=50000"}, Runtime::Simgpu, {}, "too_short",
       {"too short to judge", "the context created in cudaMalloc"}, {"allocator churn"}},
      {"queued_kernels_short", {"@queued_kernels", "--kernels", "5"}, Runtime::Simgpu,
       {"NODE=long-kernels.json", "GPUSCOPE_NVML_HZ=0"}, "too_short", {"too short to judge"}},
      // Most of a texture sample's few milliseconds fill and check its image
      // on the host: a hint at most, never "[fail] CPU-bound" with a fix.
      {"simple_texture_short", {"%simple_texture", "--width=512", "--height=256"}, Runtime::Simgpu, {}, "too_short",
       {"too short to judge", "the context created in cudaMallocArray"}, {"[fail]"}},
      {"constant_filter_short", {"%constant_filter", "--n=262144", "--radius=8"}, Runtime::Simgpu, {}, "too_short",
       {"too short to judge"}, {"[fail]"}},
      // 8. Too few NVML samples: GPU busy from the host side.
      {"queued_kernels_without_nvml", {"@queued_kernels"}, Runtime::Simgpu,
       {"NODE=long-kernels.json", "GPUSCOPE_NVML_HZ=0"}, "healthy",
       {"inferred from the host: 1 synchronization(s) waited on queued work"}, {"sync-bound"}},
      {"queued_kernels_with_nvml", {"@queued_kernels"}, Runtime::Simgpu, {"NODE=long-kernels.json"}, "healthy",
       {"GPU busy: "}, {"sync-bound", "clocks held down"}},
      // 9. A GPU whose clocks were held down is named, as gpuscope doctor names it, and is not the verdict:
      // the program is still GPU-bound.
      {"compute_bound_thermal_slowdown", {"@compute_bound", "--iters", "4000"}, Runtime::Simgpu,
       {"NODE=throttled.json"}, "healthy",
       {"[warn] node: GPU clocks held down: GPU 0 hardware slowdown (100% of its NVML samples); GPU 0 hardware "
        "thermal slowdown (100%",
        "SM clock 1095-1095 MHz", "check cooling", "`gpuscope doctor`"}},
      {"compute_bound_power_cap", {"@compute_bound", "--iters", "4000"}, Runtime::Simgpu, {"NODE=power-capped.json"},
       "healthy",
       {"[warn] node: GPU clocks held down: GPU 0 software power cap (100% of its NVML samples)",
        "GPU 0: enforced power limit 400 W, below the board's default 700 W, at the start of capture"},
       {"hardware slowdown", "thermal"}},
  };
  return all;
}

class VerdictCase : public ::testing::TestWithParam<Case> {
 protected:
  // Environment of the traced program: the runtime it gets and the case's
  // variables (NODE=file becomes SIMGPU_NODE=<path>).
  static std::vector<std::string> environment(const Case& c) {
    std::vector<std::string> env;
    if (c.runtime == Runtime::Simgpu) env.push_back("LD_LIBRARY_PATH=" + std::string(GPUSCOPE_SIMGPU_LIB_DIR));
    if (c.runtime == Runtime::RealNoDriver) env.push_back("LD_LIBRARY_PATH=/usr/local/cuda/lib64");
    for (const std::string& e : c.env)
      env.push_back(e.starts_with("NODE=") ? "SIMGPU_NODE=" + node_path(e.substr(5)) : e);
    return environment_with(env, {"LD_PRELOAD", "GPUSCOPE_OUTPUT", "SIMGPU_NODE", "CUDA_VISIBLE_DEVICES",
                                  "GPUSCOPE_RUN_ID", "GPUSCOPE_ROOT_PID", "GPUSCOPE_PARENT_PID"});
  }
};

TEST_P(VerdictCase, GetsItsClassAndShowsItsEvidence) {
  const Case& c = GetParam();
  if (c.runtime == Runtime::Simgpu && !simgpu_built()) GTEST_SKIP() << "simgpu is not built";
  if (c.runtime == Runtime::RealNoDriver &&
      run({bin("gpu_probe")}, environment_with({}, {"LD_LIBRARY_PATH"})).exit_code() == 0)
    GTEST_SKIP() << "a usable GPU is present";
  TempDir dir;
  std::vector<std::string> argv = {gpuscope_exe(), "run", "-q", "-o", dir.path() + "/", "--"};
  argv.push_back(program_path(c.argv.front()));
  argv.insert(argv.end(), c.argv.begin() + 1, c.argv.end());
  run(argv, environment(c));
  const auto traces = traces_in(dir.path());
  ASSERT_FALSE(traces.empty()) << "no trace written";
  const auto analyzed = run({gpuscope_exe(), "analyze", "--json", dir.path()}, clean_env());
  ASSERT_EQ(analyzed.exit_code(), 0) << analyzed.err;
  json doc = json::parse(analyzed.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded());
  const json per_trace = doc.contains("traces") ? doc["traces"] : json::array({doc});
  for (const json& t : per_trace)
    EXPECT_EQ(t["verdict"]["class"], c.expected) << t["program"] << ": " << t["verdict"].dump();
  const std::string text = run({gpuscope_exe(), "analyze", traces.front()}, clean_env()).out;
  for (const char* words : c.report_has) EXPECT_NE(text.find(words), std::string::npos) << words << "\n" << text;
  for (const char* words : c.report_lacks) EXPECT_EQ(text.find(words), std::string::npos) << words << "\n" << text;
}

INSTANTIATE_TEST_SUITE_P(Cases, VerdictCase, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

// 6. A window that selects nothing is an error naming the trace's span, not
// a verdict about no time at all.
TEST(VerdictScope, AWindowPastTheEndIsExitTwoWithTheTracesSpan) {
  TempDir dir;
  const std::string trace = dir.file("ls.gpuscope");
  run({gpuscope_exe(), "run", "-q", "-o", trace, "--", "/bin/ls", "/"}, clean_env());
  for (const char* format : {"text", "json", "prometheus"}) {
    const auto r = run({gpuscope_exe(), "analyze", "--format", format, "--window", "100:200", trace}, clean_env());
    EXPECT_EQ(r.exit_code(), 2) << format;
    EXPECT_EQ(count_lines_with(r.err, "gpuscope:"), 1) << r.err;
    EXPECT_NE(r.err.find("--window 100:200: " + trace + " spans 0.000-"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("the window selects none of it"), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("cpu_fallback"), std::string::npos) << r.out;
  }
  EXPECT_EQ(run({gpuscope_exe(), "analyze", "--window", "0:100", trace}, clean_env()).exit_code(), 0);
}

// The fleet query: a directory of mixed processes sets exactly one verdict
// class per process that did CUDA work, and none for the others.
TEST(VerdictScope, PrometheusSetsOneClassPerCudaProcessAndNoneForTheOthers) {
  if (!simgpu_built()) GTEST_SKIP() << "simgpu is not built";
  TempDir dir;
  const auto simgpu = environment_with({"LD_LIBRARY_PATH=" + std::string(GPUSCOPE_SIMGPU_LIB_DIR)},
                                       {"LD_PRELOAD", "GPUSCOPE_OUTPUT", "SIMGPU_NODE"});
  run({gpuscope_exe(), "run", "-q", "-o", dir.path() + "/", "--", "/bin/sh", "-c", "ls / > /dev/null; env > /dev/null"},
      clean_env());
  run({gpuscope_exe(), "run", "-q", "-o", dir.path() + "/", "--", bin("sync_bound"), "--iters", "20000"}, simgpu);
  run({gpuscope_exe(), "run", "-q", "-o", dir.path() + "/", "--", program_path("%vector_add")}, simgpu);
  const size_t traces = traces_in(dir.path()).size();
  ASSERT_GE(traces, 4u);  // sh, ls, env, and the two CUDA programs
  const auto r = run({gpuscope_exe(), "analyze", "--format", "prometheus", dir.path()}, clean_env());
  ASSERT_EQ(r.exit_code(), 0) << r.err;
  int ones = 0, cuda_work = 0, no_cuda_work = 0;
  for (size_t at = 0; (at = r.out.find("\ngpuscope_", at)) != std::string::npos; ++at) {
    const std::string line = r.out.substr(at + 1, r.out.find('\n', at + 1) - at - 1);
    if (line.starts_with("gpuscope_verdict{") && line.ends_with(" 1")) ++ones;
    if (line.starts_with("gpuscope_cuda_work{")) (line.ends_with(" 1") ? cuda_work : no_cuda_work)++;
  }
  EXPECT_EQ(cuda_work, 2) << r.out;
  EXPECT_EQ(no_cuda_work, static_cast<int>(traces) - 2) << r.out;
  EXPECT_EQ(ones, 2) << r.out;
  EXPECT_EQ(r.out.find("class=\"cpu_fallback\"} 1"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace gpuscope::test
