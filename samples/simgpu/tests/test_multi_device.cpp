// Run with SIMGPU_NODE=tests/nodes/test-two-devices.json.
#include <cstdlib>
#include <cstring>

#include "test_support.hpp"

namespace {

using simgpu_test::kernel;
using simgpu_test::launch;

TEST(MultiDevice, TwoDistinctDevices) {
  int count = 0;
  CUDA_OK(cudaGetDeviceCount(&count));
  ASSERT_EQ(2, count);
  cudaDeviceProp a, b;
  CUDA_OK(cudaGetDeviceProperties(&a, 0));
  CUDA_OK(cudaGetDeviceProperties(&b, 1));
  EXPECT_NE(a.pciBusID, b.pciBusID);
  EXPECT_NE(0, std::memcmp(&a.uuid, &b.uuid, sizeof a.uuid));
  EXPECT_STREQ("simgpu H200 second (simulated)", b.name);
  EXPECT_EQ(cudaErrorInvalidDevice, cudaSetDevice(2));
  cudaGetLastError();
}

TEST(MultiDevice, DevicesRunIndependently) {
  CUDA_OK(cudaSetDevice(1));
  void* p = nullptr;
  CUDA_OK(cudaMalloc(&p, 4096));
  cudaPointerAttributes attr;
  CUDA_OK(cudaPointerGetAttributes(&attr, p));
  EXPECT_EQ(cudaMemoryTypeDevice, attr.type);
  EXPECT_EQ(1, attr.device);
  CUDA_OK(launch(kernel("k_50ms")));
  CUDA_OK(cudaSetDevice(0));
  int current = -1;
  CUDA_OK(cudaGetDevice(&current));
  EXPECT_EQ(0, current);
  CUDA_OK(cudaDeviceSynchronize());  // device 0 is idle: returns without waiting for device 1
  CUDA_OK(cudaSetDevice(1));
  EXPECT_EQ(cudaErrorNotReady, cudaStreamQuery(nullptr));
  CUDA_OK(cudaDeviceSynchronize());
  CUDA_OK(cudaFree(p));
}

// Run a second time with CUDA_VISIBLE_DEVICES=1: only the second GPU, as ordinal 0.
TEST(MultiDevice, VisibleDevicesSelectsAndRenumbers) {
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  if (!visible || std::strcmp(visible, "1") != 0) GTEST_SKIP() << "needs CUDA_VISIBLE_DEVICES=1";
  int count = 0;
  CUDA_OK(cudaGetDeviceCount(&count));
  EXPECT_EQ(1, count);
  cudaDeviceProp prop;
  CUDA_OK(cudaGetDeviceProperties(&prop, 0));
  EXPECT_STREQ("simgpu H200 second (simulated)", prop.name);
}

}  // namespace
