// Peer access and copies between the two devices of
// tests/nodes/test-two-devices.json: H200s on PCIe Gen5 x16 (53.55 GB/s
// pinned) whose peer link moves 100 GB/s.
#include <cstring>
#include <vector>

#include "test_support.hpp"

namespace {

using simgpu_test::elapsed_ms;
using simgpu_test::kernel;
using simgpu_test::launch;

void* device_buffer(int dev, size_t bytes, int fill) {
  void* p = nullptr;
  EXPECT_EQ(cudaSuccess, cudaSetDevice(dev));
  EXPECT_EQ(cudaSuccess, cudaMalloc(&p, bytes));
  EXPECT_EQ(cudaSuccess, cudaMemset(p, fill, bytes));
  EXPECT_EQ(cudaSuccess, cudaDeviceSynchronize());
  return p;
}

char byte_at(int dev, const void* p, size_t offset) {
  char c = 0;
  EXPECT_EQ(cudaSuccess, cudaSetDevice(dev));
  EXPECT_EQ(cudaSuccess, cudaMemcpy(&c, static_cast<const char*>(p) + offset, 1, cudaMemcpyDeviceToHost));
  return c;
}

TEST(Peer, AccessRulesAndErrors) {
  int can = -1;
  CUDA_OK(cudaDeviceCanAccessPeer(&can, 0, 1));
  EXPECT_EQ(1, can);
  CUDA_OK(cudaDeviceCanAccessPeer(&can, 0, 0));
  EXPECT_EQ(0, can);
  EXPECT_EQ(cudaErrorInvalidDevice, cudaDeviceCanAccessPeer(&can, 0, 2));
  int value = 0;
  CUDA_OK(cudaDeviceGetP2PAttribute(&value, cudaDevP2PAttrAccessSupported, 0, 1));
  EXPECT_EQ(1, value);
  CUDA_OK(cudaSetDevice(0));
  CUDA_OK(cudaDeviceEnablePeerAccess(1, 0));
  EXPECT_EQ(cudaErrorPeerAccessAlreadyEnabled, cudaDeviceEnablePeerAccess(1, 0));
  EXPECT_EQ(cudaErrorInvalidDevice, cudaDeviceEnablePeerAccess(0, 0));
  EXPECT_EQ(cudaErrorInvalidValue, cudaDeviceEnablePeerAccess(1, 1));
  CUDA_OK(cudaDeviceDisablePeerAccess(1));
  EXPECT_EQ(cudaErrorPeerAccessNotEnabled, cudaDeviceDisablePeerAccess(1));
  cudaGetLastError();
}

TEST(Peer, CopiesMoveBytesBetweenDevices) {
  constexpr size_t kBytes = 1 << 16;
  void* a = device_buffer(0, kBytes, 'a');
  void* b = device_buffer(1, kBytes, 'b');
  CUDA_OK(cudaSetDevice(0));
  CUDA_OK(cudaMemcpyPeer(b, 1, a, 0, kBytes / 2));
  EXPECT_EQ('a', byte_at(1, b, 0));
  EXPECT_EQ('b', byte_at(1, b, kBytes / 2));
  CUDA_OK(cudaMemset(a, 'c', kBytes));
  CUDA_OK(cudaMemcpy(b, a, kBytes, cudaMemcpyDefault));  // unified addressing finds both devices
  EXPECT_EQ('c', byte_at(1, b, kBytes - 1));
  CUDA_OK(cudaSetDevice(1));
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  CUDA_OK(cudaMemset(b, 'd', kBytes));
  CUDA_OK(cudaMemcpyPeerAsync(a, 0, b, 1, kBytes, s));
  CUDA_OK(cudaStreamSynchronize(s));
  EXPECT_EQ('d', byte_at(0, a, 7));
  CUDA_OK(cudaSetDevice(1));
  CUDA_OK(cudaStreamDestroy(s));
  EXPECT_EQ(cudaErrorInvalidValue, cudaMemcpyPeer(a, 1, b, 1, kBytes));  // a is not device 1's
  cudaGetLastError();
}

// Modeled time of one asynchronous peer copy on a stream of device 0.
float peer_copy_ms(void* dst, const void* src, size_t bytes) {
  return simgpu_test::modeled_ms("k_50ms", [&](cudaStream_t s) { return cudaMemcpyPeerAsync(dst, 1, src, 0, bytes, s); });
}

TEST(Peer, EnabledAccessUsesThePeerLink) {
  constexpr size_t kBytes = 64u << 20;
  void* a = device_buffer(0, kBytes, 1);
  void* b = device_buffer(1, kBytes, 2);
  CUDA_OK(cudaSetDevice(0));
  // Without peer access the copy is staged through host memory: two trips
  // over PCIe, 26.8 GB/s, 2.5 ms; over the 100 GB/s peer link 0.67 ms.
  const float staged = peer_copy_ms(b, a, kBytes);
  CUDA_OK(cudaDeviceEnablePeerAccess(1, 0));
  const float direct = peer_copy_ms(b, a, kBytes);
  EXPECT_GE(direct, 0.67f);
  EXPECT_GE(staged, 2.5f);
  EXPECT_GT(staged, 3 * direct);
  CUDA_OK(cudaDeviceDisablePeerAccess(1));
}

TEST(Peer, SynchronousPeerCopyFollowsBothDevices) {
  constexpr size_t kBytes = 4096;
  void* a = device_buffer(0, kBytes, 1);
  void* b = device_buffer(1, kBytes, 2);
  CUDA_OK(cudaSetDevice(1));
  CUDA_OK(launch(kernel("k_50ms")));  // device 1's legacy stream is busy for 50 ms
  CUDA_OK(cudaSetDevice(0));
  cudaEvent_t start, end;
  CUDA_OK(cudaEventCreate(&start));
  CUDA_OK(cudaEventCreate(&end));
  CUDA_OK(cudaEventRecord(start));
  CUDA_OK(cudaMemcpyPeer(b, 1, a, 0, kBytes));
  CUDA_OK(cudaEventRecord(end));
  CUDA_OK(cudaEventSynchronize(end));
  EXPECT_GE(elapsed_ms(start, end), 49.0f);
  EXPECT_EQ(1, byte_at(1, b, 0));
}

}  // namespace
