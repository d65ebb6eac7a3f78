// CUDA errors in the analysis, on hand-built traces: which failing calls
// say there was no GPU and which are requests a working CUDA refused
// (metrics), and a process that did GPU work, stopped at an error and
// exited non-zero, told apart from one that got past its error.
#include <gtest/gtest.h>

#include "../support/model_of.h"
#include "../support/sample_trace.h"
#include "metrics.h"
#include "rules.h"

namespace gpuscope::test {
namespace {

using analyzer::Bottleneck;

constexpr uint64_t kT0 = 5'000'000'000, kMs = 1'000'000;
constexpr uint32_t kDeviceCount = 1, kMalloc = 2, kLaunch = 3, kMemcpy = 4, kFree = 5, kTid = 7;
constexpr int32_t kOutOfMemory = 2, kCudartUnloading = 4, kNoDevice = 100;

struct Call {
  uint32_t function;
  uint64_t at_ms;
  int32_t result;
};

// One thread's calls, 1 ms each, then the exit with `exit_status`.
std::vector<uint8_t> trace_of(const std::vector<Call>& calls, int exit_status) {
  capture::ProcessMetadata meta;
  meta.pid = 11;
  meta.exe = "/app/train";
  meta.start_monotonic_ns = kT0;
  capture::TotalsInfo totals;
  totals.end.kind = fb::EndKind::Exit;
  totals.end.exit_status = exit_status;
  totals.end_monotonic_ns = kT0 + 100 * kMs;
  return one_frame_trace(meta, totals, [&](capture::ChunkBuilder& b) {
    b.add_strings({{kDeviceCount, "cudaGetDeviceCount"}, {kMalloc, "cudaMalloc"}, {kLaunch, "cudaLaunchKernel"},
                   {kMemcpy, "cudaMemcpy"}, {kFree, "cudaFree"}});
    uint64_t corr = 0;
    for (const Call& c : calls)
      b.add(fb::ApiCall(kT0 + c.at_ms * kMs, kMs, ++corr, 0, kTid, 0, c.result, c.function, 0, 0, 0, 0));
  });
}

analyzer::Metrics metrics_of(const std::vector<Call>& calls, int exit_status) {
  return analyzer::compute_metrics(model_of(trace_of(calls, exit_status)));
}

Bottleneck verdict_of(const std::vector<Call>& calls, int exit_status) {
  const analyzer::TraceModel m = model_of(trace_of(calls, exit_status));
  return analyzer::analyze(m, analyzer::compute_metrics(m)).verdict.cls;
}

const std::vector<Call> kWorkThenOom = {
    {kDeviceCount, 1, 0}, {kMalloc, 2, 0}, {kMemcpy, 3, 0}, {kLaunch, 4, 0}, {kMalloc, 5, kOutOfMemory}};

TEST(CudaErrors, AFirstRequestTheGpuRefusedIsTheProgramsErrorWithWhatShowedCudaWorked) {
  const auto x = metrics_of({{kDeviceCount, 1, 0}, {kMalloc, 2, kOutOfMemory}}, 1);
  ASSERT_EQ(x.program_errors.size(), 1u);
  EXPECT_EQ(x.program_errors[0].name, "cudaErrorMemoryAllocation");
  EXPECT_EQ(x.cuda_answered, "cudaGetDeviceCount succeeded");
  EXPECT_FALSE(x.gpu_work_done);
  EXPECT_EQ(verdict_of({{kDeviceCount, 1, 0}, {kMalloc, 2, kOutOfMemory}}, 1), Bottleneck::CudaError);
  // The error itself says a device answered when nothing else does.
  EXPECT_EQ(metrics_of({{kMalloc, 2, kOutOfMemory}}, 1).cuda_answered,
            "cudaErrorMemoryAllocation is raised by a device that exists");
  // No device: the same allocation is no request of the program's at all.
  const auto none = metrics_of({{kDeviceCount, 1, kNoDevice}, {kMalloc, 2, kNoDevice}}, 1);
  EXPECT_TRUE(none.program_errors.empty());
  EXPECT_FALSE(none.cuda_answered);
  EXPECT_EQ(verdict_of({{kDeviceCount, 1, kNoDevice}, {kMalloc, 2, kNoDevice}}, 1), Bottleneck::CudaUnavailable);
}

TEST(CudaErrors, TheFirstFailingCallNamesTheFindingNotTheMostFrequentOne) {
  // A failed allocation, then three frees of what was never allocated.
  const std::vector<Call> calls = {
      {kMalloc, 1, kOutOfMemory}, {kFree, 2, 1}, {kFree, 3, 1}, {kFree, 4, 1}};
  const auto x = metrics_of(calls, 1);
  ASSERT_TRUE(x.first_error);
  EXPECT_EQ(x.first_error->function, "cudaMalloc");
  const analyzer::TraceModel m = model_of(trace_of(calls, 1));
  const analyzer::Analysis a = analyzer::analyze(m, analyzer::compute_metrics(m));
  ASSERT_FALSE(a.findings.empty());
  EXPECT_EQ(a.findings.front().title, "failed on a CUDA error (exit status 1): cudaMalloc returned "
                                      "cudaErrorMemoryAllocation (2)");
}

TEST(CudaErrors, WorkThenAnErrorItStoppedAtThenExitNonZeroIsWhatItDiedOf) {
  const auto x = metrics_of(kWorkThenOom, 1);
  ASSERT_TRUE(x.stopped_on_error);
  EXPECT_EQ(x.stopped_on_error->function, "cudaMalloc");
  EXPECT_EQ(x.stopped_on_error->code, kOutOfMemory);
  const analyzer::TraceModel m = model_of(trace_of(kWorkThenOom, 1));
  const analyzer::Analysis a = analyzer::analyze(m, analyzer::compute_metrics(m));
  EXPECT_EQ(a.verdict.cls, Bottleneck::CudaError);
  ASSERT_FALSE(a.findings.empty());
  EXPECT_EQ(a.findings.front().id, "cuda.program_failed_on_error");
  EXPECT_EQ(a.findings.front().title,
            "failed on a CUDA error: the program exited with status 1 after cudaMalloc returned "
            "cudaErrorMemoryAllocation (2)");
}

TEST(CudaErrors, AnErrorTheProgramGotPastOrAZeroExitIsNotWhatItDiedOf) {
  std::vector<Call> recovered = kWorkThenOom;
  recovered.push_back({kMalloc, 6, 0});  // retried smaller, and went on
  recovered.push_back({kLaunch, 7, 0});
  EXPECT_FALSE(metrics_of(recovered, 1).stopped_on_error);
  EXPECT_NE(verdict_of(recovered, 1), Bottleneck::CudaError);
  EXPECT_FALSE(metrics_of(kWorkThenOom, 0).stopped_on_error);
  // Frees that fail while the runtime unloads at exit are no cause.
  std::vector<Call> unloading = {{kMalloc, 1, 0}, {kLaunch, 2, 0}, {kFree, 3, kCudartUnloading}};
  EXPECT_FALSE(metrics_of(unloading, 1).stopped_on_error);
  // Nor is an answer about state a program carries on after (peer access already enabled).
  std::vector<Call> state = {{kMalloc, 1, 0}, {kLaunch, 2, 0}, {kMalloc, 3, 704}};
  EXPECT_FALSE(metrics_of(state, 1).stopped_on_error);
  // A free that fails after the work is not work: the process still stopped there.
  std::vector<Call> bad_free = {{kMalloc, 1, 0}, {kLaunch, 2, 0}, {kFree, 3, 1}};
  ASSERT_TRUE(metrics_of(bad_free, 1).stopped_on_error);
  EXPECT_EQ(metrics_of(bad_free, 1).stopped_on_error->name, "cudaErrorInvalidValue");
}

// Two CUDA runtimes in one process: every runtime call went through one set
// of hooks to one of them, which the coverage says; one runtime, found
// under two spellings of its path, is not two.
// Two runtimes in one process are both traced (each through the hooks of its
// symbol version): the coverage names them. A runtime of a version gpuscope
// has no hooks for is a blind spot it states.
TEST(CudaErrors, TheCoverageNamesTheRuntimesAndAnyItCannotSee) {
  const analyzer::TraceModel m = model_of(trace_of({{kDeviceCount, 0, 0}}, 0));
  analyzer::Metrics x = analyzer::compute_metrics(m);
  const auto line_starting = [&](const std::string& prefix) {
    for (const auto& line : analyzer::analyze(m, x).coverage)
      if (line.rfind(prefix, 0) == 0) return line;
    return std::string();
  };
  const std::vector<std::string> one = {"/usr/local/cuda/lib64/libcudart.so.13.0.96", "libcudart.so.13",
                                        "libcublas.so.13"};
  x.loaded_gpu_libraries = one;
  EXPECT_EQ(line_starting("CUDA runtime"), "");
  x.loaded_gpu_libraries = {one[0], one[1], "/venv/nvidia/cuda_runtime/lib/libcudart.so.12",
                            "/opt/old/libcudart.so.11.0"};
  EXPECT_EQ(line_starting("CUDA runtimes: ").rfind("CUDA runtimes: 3 loaded (libcudart.so.11, libcudart.so.12, "
                                                   "libcudart.so.13): each traced",
                                                   0),
            0u)
      << line_starting("CUDA runtimes: ");
  EXPECT_EQ(line_starting("CUDA runtime calls:"), "");
  x.loaded_gpu_libraries = {"/opt/cuda-9.2/lib64/libcudart.so.9.2.148", "/future/libcudart.so.15.0.1"};
  EXPECT_EQ(line_starting("CUDA runtime calls:").rfind(
                "CUDA runtime calls: not seen through libcudart.so.15, libcudart.so.9, a version", 0),
            0u)
      << line_starting("CUDA runtime calls:");
}

}  // namespace
}  // namespace gpuscope::test
