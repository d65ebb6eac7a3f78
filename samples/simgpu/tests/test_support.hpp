// Helpers for simgpu's tests: kernels registered with the runtime by hand
// (the tests are plain C++, so there is no nvcc to emit <<<>>> stubs) and a
// wall clock.
#pragma once

#include <chrono>
#include <string>

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#define CUDA_OK(expr) ASSERT_EQ(cudaSuccess, (expr)) << #expr

namespace simgpu_test {

// Registers a kernel named `name` through __cudaRegisterFatBinary and
// __cudaRegisterFunction, as nvcc's startup code does, with a PTX image that
// declares it; returns the host-side handle cudaLaunchKernel takes.
const void* kernel(const std::string& name);

cudaError_t launch(const void* k, cudaStream_t s = nullptr, unsigned blocks = 1, unsigned threads = 1);

inline double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Modeled time between two completed events.
inline float elapsed_ms(cudaEvent_t a, cudaEvent_t b) {
  float ms = -1;
  EXPECT_EQ(cudaSuccess, cudaEventElapsedTime(&ms, a, b));
  return ms;
}

// Modeled time of what `enqueue(stream)` queues on a fresh stream that runs
// kernel `busy` first: the work starts when the kernel ends, however late a
// loaded machine lets the host submit it.
template <class F>
float modeled_ms(const char* busy, F&& enqueue) {
  cudaStream_t s = nullptr;
  cudaEvent_t start = nullptr, end = nullptr;
  EXPECT_EQ(cudaSuccess, cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  EXPECT_EQ(cudaSuccess, cudaEventCreate(&start));
  EXPECT_EQ(cudaSuccess, cudaEventCreate(&end));
  EXPECT_EQ(cudaSuccess, launch(kernel(busy), s));
  EXPECT_EQ(cudaSuccess, cudaEventRecord(start, s));
  EXPECT_EQ(cudaSuccess, enqueue(s));
  EXPECT_EQ(cudaSuccess, cudaEventRecord(end, s));
  EXPECT_EQ(cudaSuccess, cudaStreamSynchronize(s));
  const float ms = elapsed_ms(start, end);
  cudaEventDestroy(start);
  cudaEventDestroy(end);
  cudaStreamDestroy(s);
  return ms;
}

template <class F>
double wall_ms(F&& f) {
  const double start = now_ms();
  f();
  return now_ms() - start;
}

}  // namespace simgpu_test
