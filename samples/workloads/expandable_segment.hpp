// One expandable segment, as PyTorch's caching allocator keeps them with
// PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: a reserved device
// address range that grows by mapping pages of physical memory (cuMemCreate,
// cuMemMap, cuMemSetAccess) and shrinks by unmapping and releasing them
// (cuMemUnmap, cuMemRelease). Like PyTorch it asks the runtime for the
// driver functions (cudaGetDriverEntryPointByVersion), so the program links
// no libcuda.
#pragma once

#include <cuda.h>

#include <vector>

#include "common.hpp"

namespace sample {

class ExpandableSegment {
 public:
  ExpandableSegment(int device, size_t max_bytes) {
    lookup("cuMemGetAllocationGranularity", &granularity_of_);
    lookup("cuMemAddressReserve", &reserve_);
    lookup("cuMemAddressFree", &address_free_);
    lookup("cuMemCreate", &create_);
    lookup("cuMemRelease", &release_);
    lookup("cuMemMap", &map_);
    lookup("cuMemUnmap", &unmap_);
    lookup("cuMemSetAccess", &set_access_);
    prop_.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop_.location = {CU_MEM_LOCATION_TYPE_DEVICE, device};
    driver(granularity_of_(&page_, &prop_, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED), "cuMemGetAllocationGranularity");
    size_ = (max_bytes + page_ - 1) / page_ * page_;
    driver(reserve_(&base_, size_, 0, 0, 0), "cuMemAddressReserve");
  }
  ~ExpandableSegment() {
    shrink_to(0);
    address_free_(base_, size_);
  }
  ExpandableSegment(const ExpandableSegment&) = delete;
  ExpandableSegment& operator=(const ExpandableSegment&) = delete;

  void* data() const { return reinterpret_cast<void*>(base_); }
  // Maps pages until `bytes` are backed.
  void grow_to(size_t bytes) {
    while (pages_.size() * page_ < bytes) {
      const CUdeviceptr at = base_ + pages_.size() * page_;
      CUmemGenericAllocationHandle h = 0;
      driver(create_(&h, page_, &prop_, 0), "cuMemCreate");
      driver(map_(at, page_, 0, h, 0), "cuMemMap");
      const CUmemAccessDesc rw{prop_.location, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
      driver(set_access_(at, page_, &rw, 1), "cuMemSetAccess");
      pages_.push_back(h);
    }
  }
  // Unmaps and releases pages past `bytes`; the caller has synchronized.
  void shrink_to(size_t bytes) {
    while (pages_.size() * page_ > bytes && !pages_.empty()) {
      driver(unmap_(base_ + (pages_.size() - 1) * page_, page_), "cuMemUnmap");
      driver(release_(pages_.back()), "cuMemRelease");
      pages_.pop_back();
    }
  }

 private:
  template <class F> static void lookup(const char* symbol, F* out) {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    CHECK(cudaGetDriverEntryPointByVersion(symbol, &fn, 12000, cudaEnableDefault, &found));
    driver(found == cudaDriverEntryPointSuccess ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND, symbol);
    *out = reinterpret_cast<F>(fn);
  }
  static void driver(CUresult r, const char* what) {
    if (r == CUDA_SUCCESS) return;
    std::fprintf(stderr, "%s: %s failed: CUDA driver error %d\n", name(), what, static_cast<int>(r));
    std::exit(1);
  }

  decltype(&cuMemGetAllocationGranularity) granularity_of_ = nullptr;
  decltype(&cuMemAddressReserve) reserve_ = nullptr;
  decltype(&cuMemAddressFree) address_free_ = nullptr;
  decltype(&cuMemCreate) create_ = nullptr;
  decltype(&cuMemRelease) release_ = nullptr;
  decltype(&cuMemMap) map_ = nullptr;
  decltype(&cuMemUnmap) unmap_ = nullptr;
  decltype(&cuMemSetAccess) set_access_ = nullptr;
  CUmemAllocationProp prop_{};
  size_t page_ = 0, size_ = 0;
  CUdeviceptr base_ = 0;
  std::vector<CUmemGenericAllocationHandle> pages_;
};

}  // namespace sample
