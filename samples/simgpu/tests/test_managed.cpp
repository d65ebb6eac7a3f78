// Managed memory on tests/nodes/test.json (copy engines at 0.1 GB/s, so
// moving 2 MiB takes 21 ms): host access works, a prefetch costs a modeled
// transfer of what is not already at its target.
#include <cstring>
#include <vector>

#include "test_support.hpp"

namespace {


constexpr size_t kTwoMiB = 2u << 20;
const cudaMemLocation kDevice0{cudaMemLocationTypeDevice, 0};
const cudaMemLocation kHost{cudaMemLocationTypeHost, 0};

float prefetch_ms(const void* p, size_t bytes, cudaMemLocation to) {
  return simgpu_test::modeled_ms("k_10ms", [&](cudaStream_t s) { return cudaMemPrefetchAsync(p, bytes, to, 0, s); });
}

int range_int(const void* p, size_t bytes, cudaMemRangeAttribute attr) {
  int value = -100;
  EXPECT_EQ(cudaSuccess, cudaMemRangeGetAttribute(&value, sizeof value, attr, p, bytes));
  return value;
}

TEST(Managed, HostAccessAndPrefetchesThatMoveWhatIsElsewhere) {
  char* p = nullptr;
  CUDA_OK(cudaMallocManaged(&p, 2 * kTwoMiB));
  std::memset(p, 'm', 2 * kTwoMiB);  // it is host memory
  cudaPointerAttributes attr{};
  CUDA_OK(cudaPointerGetAttributes(&attr, p));
  EXPECT_EQ(cudaMemoryTypeManaged, attr.type);
  EXPECT_GE(prefetch_ms(p, kTwoMiB, kDevice0), 20.0f);   // half of it to the device
  EXPECT_LT(prefetch_ms(p, kTwoMiB, kDevice0), 1.0f);    // already there: nothing moves
  const float rest = prefetch_ms(p, 2 * kTwoMiB, kDevice0);  // only the other half moves
  EXPECT_GE(rest, 20.0f);
  EXPECT_LT(rest, 40.0f);
  EXPECT_EQ(0, range_int(p, 2 * kTwoMiB, cudaMemRangeAttributeLastPrefetchLocation));
  EXPECT_GE(prefetch_ms(p, 2 * kTwoMiB, kHost), 40.0f);  // all of it back
  EXPECT_EQ(cudaCpuDeviceId, range_int(p, 2 * kTwoMiB, cudaMemRangeAttributeLastPrefetchLocation));
  EXPECT_EQ('m', p[2 * kTwoMiB - 1]);
  CUDA_OK(cudaFree(p));
}

TEST(Managed, AdviceIsRecordedAndReported) {
  float* p = nullptr;
  CUDA_OK(cudaMallocManaged(&p, 1 << 20));
  EXPECT_EQ(0, range_int(p, 1 << 20, cudaMemRangeAttributeReadMostly));
  CUDA_OK(cudaMemAdvise(p, 1 << 20, cudaMemAdviseSetReadMostly, kDevice0));
  EXPECT_EQ(1, range_int(p, 1 << 20, cudaMemRangeAttributeReadMostly));
  CUDA_OK(cudaMemAdvise(p, 1 << 20, cudaMemAdviseSetPreferredLocation, kDevice0));
  EXPECT_EQ(0, range_int(p, 1 << 20, cudaMemRangeAttributePreferredLocation));
  CUDA_OK(cudaMemAdvise(p, 1 << 20, cudaMemAdviseSetAccessedBy, kDevice0));
  int accessed[3] = {7, 7, 7};
  CUDA_OK(cudaMemRangeGetAttribute(accessed, sizeof accessed, cudaMemRangeAttributeAccessedBy, p, 1 << 20));
  EXPECT_EQ(0, accessed[0]);
  EXPECT_EQ(cudaInvalidDeviceId, accessed[1]);
  CUDA_OK(cudaMemAdvise(p, 1 << 20, cudaMemAdviseUnsetPreferredLocation, kDevice0));
  EXPECT_EQ(cudaInvalidDeviceId, range_int(p, 1 << 20, cudaMemRangeAttributePreferredLocation));
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  CUDA_OK(cudaStreamAttachMemAsync(s, p, 0, cudaMemAttachSingle));
  CUDA_OK(cudaStreamSynchronize(s));
  CUDA_OK(cudaStreamDestroy(s));
  CUDA_OK(cudaFree(p));
}

TEST(Managed, RefusesWhatIsNotManaged) {
  void *dev = nullptr, *p = nullptr;
  CUDA_OK(cudaMalloc(&dev, 4096));
  EXPECT_EQ(cudaErrorInvalidValue, cudaMemPrefetchAsync(dev, 4096, kDevice0, 0, nullptr));
  EXPECT_EQ(cudaErrorInvalidValue, cudaMemAdvise(dev, 4096, cudaMemAdviseSetReadMostly, kDevice0));
  EXPECT_EQ(cudaErrorInvalidValue, cudaMallocManaged(&p, 4096, 0));  // attach global or host
  CUDA_OK(cudaMallocManaged(&p, 4096, cudaMemAttachHost));
  EXPECT_EQ(cudaErrorInvalidValue,
            cudaStreamAttachMemAsync(nullptr, static_cast<char*>(p) + 1, 0, cudaMemAttachGlobal));  // not its start
  EXPECT_EQ(cudaErrorInvalidDevice, cudaMemPrefetchAsync(p, 4096, cudaMemLocation{cudaMemLocationTypeDevice, 3}, 0,
                                                         nullptr));
  cudaGetLastError();
  CUDA_OK(cudaFree(p));
  CUDA_OK(cudaFree(dev));
}

}  // namespace
