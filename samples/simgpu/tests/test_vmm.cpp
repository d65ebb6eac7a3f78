// Virtual memory management on tests/nodes/test.json: reserved address
// space, physical allocations charged to the device, mappings that copies
// reach, and the memory going back only when released and unmapped.
#include <algorithm>
#include <cstring>
#include <vector>

#include <cuda.h>
#include <cuda_runtime.h>

#include "test_support.hpp"

namespace {

#define CU_OK(expr) ASSERT_EQ(CUDA_SUCCESS, (expr)) << #expr

class Vmm : public testing::Test {
 protected:
  void SetUp() override {
    CUDA_OK(cudaFree(nullptr));  // the primary context, current
    prop_.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop_.location = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
    CU_OK(cuMemGetAllocationGranularity(&granularity_, &prop_, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  }
  size_t free_bytes() {
    size_t free = 0, total = 0;
    EXPECT_EQ(CUDA_SUCCESS, cuMemGetInfo(&free, &total));
    return free;
  }
  CUmemAllocationProp prop_{};
  size_t granularity_ = 0;
};

TEST_F(Vmm, MappedMemoryIsDeviceMemoryUntilReleasedAndUnmapped) {
  EXPECT_EQ(2u << 20, granularity_);
  const size_t before = free_bytes();
  CUdeviceptr va = 0;
  CU_OK(cuMemAddressReserve(&va, 4 * granularity_, 0, 0, 0));
  EXPECT_EQ(0u, va % granularity_);
  EXPECT_EQ(before, free_bytes());  // address space costs no memory
  CUmemGenericAllocationHandle h = 0;
  CU_OK(cuMemCreate(&h, 2 * granularity_, &prop_, 0));
  EXPECT_EQ(before - 2 * granularity_, free_bytes());
  CU_OK(cuMemMap(va, 2 * granularity_, 0, h, 0));
  const CUmemAccessDesc rw{{CU_MEM_LOCATION_TYPE_DEVICE, 0}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
  CU_OK(cuMemSetAccess(va, 2 * granularity_, &rw, 1));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemSetAccess(va, 3 * granularity_, &rw, 1));  // a page is not mapped

  std::vector<char> in(granularity_, 'v'), out(granularity_, 0);
  CU_OK(cuMemcpyHtoD(va + granularity_, in.data(), in.size()));
  CU_OK(cuMemcpyDtoH(out.data(), va + granularity_, out.size()));
  EXPECT_EQ(in, out);
  unsigned type = 0;
  CU_OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, va));
  EXPECT_EQ(CU_MEMORYTYPE_DEVICE, type);
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemFree(va));  // a mapping is not cuMemAlloc's

  CU_OK(cuMemRelease(h));
  EXPECT_EQ(before - 2 * granularity_, free_bytes());  // still mapped
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemUnmap(va, granularity_));  // half a mapping
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemAddressFree(va, 4 * granularity_));  // still mapped
  CU_OK(cuMemUnmap(va, 2 * granularity_));
  EXPECT_EQ(before, free_bytes());
  CU_OK(cuMemAddressFree(va, 4 * granularity_));
}

TEST_F(Vmm, ARangeGrowsByMappingMoreAllocationsBehindIt) {
  CUdeviceptr va = 0;
  CU_OK(cuMemAddressReserve(&va, 8 * granularity_, 0, 0, 0));
  std::vector<CUmemGenericAllocationHandle> handles(3);
  for (size_t i = 0; i < handles.size(); ++i) {
    CU_OK(cuMemCreate(&handles[i], granularity_, &prop_, 0));
    CU_OK(cuMemMap(va + i * granularity_, granularity_, 0, handles[i], 0));
  }
  const CUmemAccessDesc rw{{CU_MEM_LOCATION_TYPE_DEVICE, 0}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
  CU_OK(cuMemSetAccess(va, 3 * granularity_, &rw, 1));
  CU_OK(cuMemsetD8(va, 7, 3 * granularity_));  // one memset across three mappings
  std::vector<unsigned char> out(3 * granularity_);
  CU_OK(cuMemcpyDtoH(out.data(), va, out.size()));
  EXPECT_EQ(3 * granularity_, static_cast<size_t>(std::count(out.begin(), out.end(), 7)));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemMap(va, granularity_, 0, handles[0], 0));  // already mapped
  CU_OK(cuMemUnmap(va, 3 * granularity_));  // whole mappings, back to back
  for (CUmemGenericAllocationHandle h : handles) CU_OK(cuMemRelease(h));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemRelease(handles[0]));
  CU_OK(cuMemAddressFree(va, 8 * granularity_));
}

TEST_F(Vmm, RefusesWhatCudaRefuses) {
  CUmemGenericAllocationHandle h = 0;
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemCreate(&h, granularity_ + 4096, &prop_, 0));  // not whole pages
  CUmemAllocationProp bad = prop_;
  bad.location.id = 5;
  EXPECT_EQ(CUDA_ERROR_INVALID_DEVICE, cuMemCreate(&h, granularity_, &bad, 0));
  size_t free = 0, total = 0;
  CU_OK(cuMemGetInfo(&free, &total));
  const size_t too_much = (free / granularity_ + 1) * granularity_;
  EXPECT_EQ(CUDA_ERROR_OUT_OF_MEMORY, cuMemCreate(&h, too_much, &prop_, 0));
  CUdeviceptr unreserved = 0x10000000;
  CU_OK(cuMemCreate(&h, granularity_, &prop_, 0));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemMap(unreserved, granularity_, 0, h, 0));
  CUmemAllocationProp got{};
  CU_OK(cuMemGetAllocationPropertiesFromHandle(&got, h));
  EXPECT_EQ(CU_MEM_LOCATION_TYPE_DEVICE, got.location.type);
  CU_OK(cuMemRelease(h));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemGetAllocationPropertiesFromHandle(&got, h));
}

}  // namespace
