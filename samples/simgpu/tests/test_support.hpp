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

template <class F>
double wall_ms(F&& f) {
  const double start = now_ms();
  f();
  return now_ms() - start;
}

}  // namespace simgpu_test
