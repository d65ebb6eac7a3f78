// Device limits, cache preference, stream identity and device choice
// (tests/nodes/test.json): kept by the model and reported back.
#include <cuda.h>

#include "test_support.hpp"

namespace {

size_t limit(cudaLimit which) {
  size_t value = 0;
  EXPECT_EQ(cudaSuccess, cudaDeviceGetLimit(&value, which));
  return value;
}

TEST(Settings, LimitsAndCachePreference) {
  EXPECT_EQ(1024u, limit(cudaLimitStackSize));
  EXPECT_EQ(8u << 20, limit(cudaLimitMallocHeapSize));
  CUDA_OK(cudaDeviceSetLimit(cudaLimitMallocHeapSize, 64u << 20));
  EXPECT_EQ(64u << 20, limit(cudaLimitMallocHeapSize));
  EXPECT_EQ(cudaErrorInvalidValue, cudaDeviceSetLimit(cudaLimitMaxL2FetchGranularity, 256));
  cudaGetLastError();
  cudaFuncCache config = cudaFuncCachePreferL1;
  CUDA_OK(cudaDeviceGetCacheConfig(&config));
  EXPECT_EQ(cudaFuncCachePreferNone, config);
  CUDA_OK(cudaDeviceSetCacheConfig(cudaFuncCachePreferShared));
  CUDA_OK(cudaDeviceGetCacheConfig(&config));
  EXPECT_EQ(cudaFuncCachePreferShared, config);
}

TEST(Settings, StreamsKnowTheirIdAndDevice) {
  cudaStream_t a, b;
  CUDA_OK(cudaStreamCreate(&a));
  CUDA_OK(cudaStreamCreate(&b));
  unsigned long long ida = 0, idb = 0, legacy = 0;
  CUDA_OK(cudaStreamGetId(a, &ida));
  CUDA_OK(cudaStreamGetId(b, &idb));
  CUDA_OK(cudaStreamGetId(nullptr, &legacy));
  EXPECT_NE(ida, idb);
  EXPECT_NE(legacy, ida);
  int device = -1;
  CUDA_OK(cudaStreamGetDevice(a, &device));
  EXPECT_EQ(0, device);
  CUcontext current = nullptr, of_stream = nullptr;
  ASSERT_EQ(CUDA_SUCCESS, cuCtxGetCurrent(&current));
  ASSERT_EQ(CUDA_SUCCESS, cuStreamGetCtx(a, &of_stream));
  EXPECT_EQ(current, of_stream);
  unsigned long long ctx_id = 0;
  ASSERT_EQ(CUDA_SUCCESS, cuCtxGetId(current, &ctx_id));
  EXPECT_NE(0u, ctx_id);
  CUDA_OK(cudaStreamDestroy(a));
  CUDA_OK(cudaStreamDestroy(b));
}

TEST(Settings, ChooseDevice) {
  cudaDeviceProp wanted{};
  wanted.major = 9;
  int device = -1;
  CUDA_OK(cudaChooseDevice(&device, &wanted));
  EXPECT_EQ(0, device);
  EXPECT_EQ(cudaErrorInvalidValue, cudaChooseDevice(&device, nullptr));
  cudaGetLastError();
}

}  // namespace
