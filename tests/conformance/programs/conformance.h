// What the conformance programs share, in the manner of the helpers public
// CUDA samples come with: a checkCudaErrors-style macro that names the failing
// call and exits with EXIT_FAILURE, EXIT_WAIVED (2) for a missing
// requirement, and the rule for checking results.  Each program is our own
// small CUDA program in the style of an introductory or utility sample; see
// tests/conformance/README.md.
//
// Results: simgpu (samples/simgpu) models time but executes no kernel, so a
// program checks what its kernels computed only where they ran
// (sample::kernels_compute(), samples/workloads/common.hpp), and always checks
// the bytes it copied.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common.hpp"

#ifndef EXIT_WAIVED
#define EXIT_WAIVED 2
#endif

namespace conformance {

// Prints the call, where it was made and the error, then exits: the
// behaviour of the checkCudaErrors helper every introductory sample uses,
// from whichever thread the error is seen on.
inline void check_result(cudaError_t result, const char* call, const char* file, int line) {
  if (result == cudaSuccess) return;
  std::fprintf(stderr, "CUDA error at %s:%d code=%d(%s) \"%s\"\n", file, line, static_cast<int>(result),
               cudaGetErrorName(result), call);
  std::exit(EXIT_FAILURE);
}

inline void check_launch(const char* kernel, const char* file, int line) {
  const cudaError_t result = cudaGetLastError();
  if (result == cudaSuccess) return;
  std::fprintf(stderr, "%s:%d: launch of %s failed: %s\n", file, line, kernel, cudaGetErrorString(result));
  std::exit(EXIT_FAILURE);
}

// Where kernel results can be checked (one cudaGetDevice and one
// cudaGetDeviceProperties); says so on stdout when they cannot.
inline bool kernel_results_checkable() {
  int device = 0;
  cudaDeviceProp prop;
  check_result(cudaGetDevice(&device), "cudaGetDevice(&device)", __FILE__, __LINE__);
  check_result(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties(&prop, device)", __FILE__, __LINE__);
  if (sample::kernels_compute(prop)) return true;
  std::printf("kernel results not checked: kernels do not execute on %s\n", prop.name);
  return false;
}

// Deterministic input data.
inline void fill(float* v, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(sample::mix(static_cast<unsigned>(i) * 2654435761u + seed) & 0xffff) / 256.0f;
}
inline void fill(int* v, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<int>(sample::mix(static_cast<unsigned>(i) + seed) & 0xffff);
}

// Times GPU work between two events, as samples do: two cudaEventCreate,
// then per measurement two cudaEventRecord, one cudaEventSynchronize and
// one cudaEventElapsedTime; release() makes the two cudaEventDestroy.
class EventTimer {
 public:
  EventTimer() {
    check_result(cudaEventCreate(&start_), "cudaEventCreate(&start_)", __FILE__, __LINE__);
    check_result(cudaEventCreate(&stop_), "cudaEventCreate(&stop_)", __FILE__, __LINE__);
  }
  void start(cudaStream_t stream = 0) { check_result(cudaEventRecord(start_, stream), "cudaEventRecord(start_)", __FILE__, __LINE__); }
  float stop_ms(cudaStream_t stream = 0) {
    float ms = 0;
    check_result(cudaEventRecord(stop_, stream), "cudaEventRecord(stop_)", __FILE__, __LINE__);
    check_result(cudaEventSynchronize(stop_), "cudaEventSynchronize(stop_)", __FILE__, __LINE__);
    check_result(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime", __FILE__, __LINE__);
    return ms;
  }
  void release() {
    check_result(cudaEventDestroy(start_), "cudaEventDestroy(start_)", __FILE__, __LINE__);
    check_result(cudaEventDestroy(stop_), "cudaEventDestroy(stop_)", __FILE__, __LINE__);
  }

 private:
  cudaEvent_t start_, stop_;
};

// The one line a sample ends with; the exit status follows it.
inline int finish(bool passed) {
  std::printf("%s\n", passed ? "Test PASSED" : "Test FAILED");
  std::fflush(stdout);
  return passed ? EXIT_SUCCESS : EXIT_FAILURE;
}

}  // namespace conformance

#define checkCudaErrors(call) ::conformance::check_result((call), #call, __FILE__, __LINE__)
#define getLastCudaError(kernel) ::conformance::check_launch((kernel), __FILE__, __LINE__)
