// Stream-ordered allocation and memory pools (tests/nodes/test.json).
#include <cstdint>

#include "test_support.hpp"

namespace {

using simgpu_test::kernel;
using simgpu_test::launch;
using simgpu_test::wall_ms;

constexpr size_t kMiB = 1 << 20;

uint64_t pool_bytes(cudaMemPool_t pool, cudaMemPoolAttr attr) {
  uint64_t value = 0;
  EXPECT_EQ(cudaSuccess, cudaMemPoolGetAttribute(pool, attr, &value));
  return value;
}

cudaMemPool_t default_pool() {
  cudaMemPool_t pool = nullptr;
  EXPECT_EQ(cudaSuccess, cudaDeviceGetDefaultMemPool(&pool, 0));
  return pool;
}

TEST(Pools, ReservedMemoryIsReused) {
  cudaMemPool_t pool = default_pool();
  uint64_t keep = UINT64_MAX;
  CUDA_OK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  void *first = nullptr, *second = nullptr;
  // New memory costs what mapping it does: 30 us + 1.5 us/MiB.
  const double grow_ms = wall_ms([&] { ASSERT_EQ(cudaSuccess, cudaMallocAsync(&first, 64 * kMiB, s)); });
  EXPECT_GE(grow_ms, 0.126);
  EXPECT_EQ(64 * kMiB, pool_bytes(pool, cudaMemPoolAttrReservedMemCurrent));
  EXPECT_EQ(64 * kMiB, pool_bytes(pool, cudaMemPoolAttrUsedMemCurrent));
  CUDA_OK(cudaFreeAsync(first, s));
  EXPECT_EQ(0u, pool_bytes(pool, cudaMemPoolAttrUsedMemCurrent));
  CUDA_OK(cudaStreamSynchronize(s));
  EXPECT_EQ(64 * kMiB, pool_bytes(pool, cudaMemPoolAttrReservedMemCurrent));  // above the threshold: kept
  CUDA_OK(cudaMallocAsync(&second, 60 * kMiB, s));
  EXPECT_EQ(first, second);  // served from the pool
  EXPECT_EQ(64 * kMiB, pool_bytes(pool, cudaMemPoolAttrReservedMemCurrent));
  CUDA_OK(cudaFreeAsync(second, s));
  CUDA_OK(cudaStreamSynchronize(s));
  CUDA_OK(cudaMemPoolTrimTo(pool, 0));
  EXPECT_EQ(0u, pool_bytes(pool, cudaMemPoolAttrReservedMemCurrent));
  EXPECT_EQ(64 * kMiB, pool_bytes(pool, cudaMemPoolAttrReservedMemHigh));
  CUDA_OK(cudaStreamDestroy(s));
}

TEST(Pools, SynchronizeReleasesWhatExceedsTheThreshold) {
  cudaMemPool_t pool = default_pool();
  uint64_t threshold = 1;
  CUDA_OK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  EXPECT_EQ(0u, threshold);  // the default
  void* p = nullptr;
  CUDA_OK(cudaMallocAsync(&p, 8 * kMiB, nullptr));
  CUDA_OK(cudaFreeAsync(p, nullptr));
  EXPECT_EQ(8 * kMiB, pool_bytes(pool, cudaMemPoolAttrReservedMemCurrent));
  CUDA_OK(cudaDeviceSynchronize());
  EXPECT_EQ(0u, pool_bytes(pool, cudaMemPoolAttrReservedMemCurrent));
  uint64_t keep = 16 * kMiB;
  CUDA_OK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  CUDA_OK(cudaMallocAsync(&p, 8 * kMiB, nullptr));
  CUDA_OK(cudaFreeAsync(p, nullptr));
  CUDA_OK(cudaDeviceSynchronize());
  EXPECT_EQ(8 * kMiB, pool_bytes(pool, cudaMemPoolAttrReservedMemCurrent));
}

TEST(Pools, AnotherStreamReusesABlockOnlyAfterItsFree) {
  cudaMemPool_t pool = default_pool();
  uint64_t keep = UINT64_MAX;
  CUDA_OK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  cudaStream_t a, b;
  CUDA_OK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  cudaEvent_t start, reused;
  CUDA_OK(cudaEventCreate(&start));
  CUDA_OK(cudaEventCreate(&reused));
  void *p = nullptr, *q = nullptr;
  CUDA_OK(cudaMallocAsync(&p, kMiB, a));
  CUDA_OK(cudaEventRecord(start, a));
  CUDA_OK(launch(kernel("k_50ms"), a));  // uses p for 50 ms
  CUDA_OK(cudaFreeAsync(p, a));
  // By default the pool hands the block to b, which then waits for a's free.
  CUDA_OK(cudaMallocAsync(&q, kMiB, b));
  EXPECT_EQ(p, q);
  CUDA_OK(cudaEventRecord(reused, b));
  CUDA_OK(cudaEventSynchronize(reused));
  float ms = 0;
  CUDA_OK(cudaEventElapsedTime(&ms, start, reused));
  EXPECT_GE(ms, 50.0f);
  CUDA_OK(cudaFreeAsync(q, b));
  // Without internal dependencies (nor opportunistic reuse) b gets new memory.
  int off = 0;
  CUDA_OK(cudaMemPoolSetAttribute(pool, cudaMemPoolReuseAllowInternalDependencies, &off));
  CUDA_OK(cudaMemPoolSetAttribute(pool, cudaMemPoolReuseAllowOpportunistic, &off));
  CUDA_OK(cudaMallocAsync(&p, kMiB, a));
  CUDA_OK(launch(kernel("k_10ms"), a));
  CUDA_OK(cudaFreeAsync(p, a));
  CUDA_OK(cudaMallocAsync(&q, kMiB, b));
  EXPECT_NE(p, q);
  CUDA_OK(cudaFreeAsync(q, b));
  CUDA_OK(cudaDeviceSynchronize());
}

TEST(Pools, ExplicitPools) {
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location = cudaMemLocation{cudaMemLocationTypeDevice, 0};
  cudaMemPool_t pool = nullptr;
  CUDA_OK(cudaMemPoolCreate(&pool, &props));
  void* p = nullptr;
  CUDA_OK(cudaMallocFromPoolAsync(&p, 3000, pool, nullptr));
  EXPECT_EQ(3072u, pool_bytes(pool, cudaMemPoolAttrUsedMemCurrent));  // 512-byte blocks
  cudaPointerAttributes attr{};
  CUDA_OK(cudaPointerGetAttributes(&attr, p));
  EXPECT_EQ(cudaMemoryTypeDevice, attr.type);
  CUDA_OK(cudaDeviceSetMemPool(0, pool));
  cudaMemPool_t current = nullptr;
  CUDA_OK(cudaDeviceGetMemPool(&current, 0));
  EXPECT_EQ(pool, current);
  cudaMemAccessFlags flags = cudaMemAccessFlagsProtNone;
  cudaMemLocation here{cudaMemLocationTypeDevice, 0};
  CUDA_OK(cudaMemPoolGetAccess(&flags, pool, &here));
  EXPECT_EQ(cudaMemAccessFlagsProtReadWrite, flags);
  const cudaMemAccessDesc none{here, cudaMemAccessFlagsProtNone};
  EXPECT_EQ(cudaErrorInvalidValue, cudaMemPoolSetAccess(pool, &none, 1));  // its own device always has access
  EXPECT_EQ(cudaErrorInvalidValue, cudaMemPoolDestroy(default_pool()));
  CUDA_OK(cudaFreeAsync(p, nullptr));
  CUDA_OK(cudaMemPoolDestroy(pool));
  CUDA_OK(cudaDeviceGetMemPool(&current, 0));
  EXPECT_EQ(default_pool(), current);
  props.handleTypes = cudaMemHandleTypePosixFileDescriptor;
  EXPECT_EQ(cudaErrorNotSupported, cudaMemPoolCreate(&pool, &props));  // no IPC
  cudaGetLastError();
}

}  // namespace
