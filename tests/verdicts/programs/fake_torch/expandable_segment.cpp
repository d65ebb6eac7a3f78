#include "expandable_segment.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace c10::cuda {
namespace {

void driver_check(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return;
  std::fprintf(stderr, "fake_torch: %s failed: CUDA driver error %d\n", what, static_cast<int>(r));
  std::exit(1);
}

template <class F> void get_symbol(const char* name, F* out) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult status{};
  if (cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &status) != cudaSuccess ||
      status != cudaDriverEntryPointSuccess)
    driver_check(CUDA_ERROR_NOT_FOUND, name);
  *out = reinterpret_cast<F>(fn);
}

}  // namespace

const DriverAPI* DriverAPI::get() {
  static const DriverAPI api = [] {
    DriverAPI d;
    get_symbol("cuMemAddressReserve", &d.cuMemAddressReserve_);
    get_symbol("cuMemAddressFree", &d.cuMemAddressFree_);
    get_symbol("cuMemCreate", &d.cuMemCreate_);
    get_symbol("cuMemRelease", &d.cuMemRelease_);
    get_symbol("cuMemMap", &d.cuMemMap_);
    get_symbol("cuMemUnmap", &d.cuMemUnmap_);
    get_symbol("cuMemSetAccess", &d.cuMemSetAccess_);
    return d;
  }();
  return &api;
}

namespace CUDACachingAllocator::Native {

bool expandable_segments_enabled() {
  const char* conf = std::getenv("PYTORCH_CUDA_ALLOC_CONF");
  return conf != nullptr && std::strstr(conf, "expandable_segments:True") != nullptr;
}

ExpandableSegment::ExpandableSegment(size_t max_bytes)
    : handles_((max_bytes + kSegmentSize - 1) / kSegmentSize, 0) {
  CUdeviceptr p = 0;
  driver_check(DriverAPI::get()->cuMemAddressReserve_(&p, handles_.size() * kSegmentSize, 0, 0, 0),
               "cuMemAddressReserve");
  base_ = reinterpret_cast<char*>(p);
}

ExpandableSegment::~ExpandableSegment() {
  unmap(0, handles_.size());
  DriverAPI::get()->cuMemAddressFree_(reinterpret_cast<CUdeviceptr>(base_), handles_.size() * kSegmentSize);
}

void ExpandableSegment::map(size_t begin, size_t end) {
  const DriverAPI* api = DriverAPI::get();
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
  for (size_t i = begin; i < end; ++i) {
    if (handles_[i] != 0) continue;
    driver_check(api->cuMemCreate_(&handles_[i], kSegmentSize, &prop, 0), "cuMemCreate");
    driver_check(api->cuMemMap_(reinterpret_cast<CUdeviceptr>(base_) + i * kSegmentSize, kSegmentSize, 0,
                                handles_[i], 0),
                 "cuMemMap");
  }
  const CUmemAccessDesc desc{prop.location, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
  driver_check(api->cuMemSetAccess_(reinterpret_cast<CUdeviceptr>(base_) + begin * kSegmentSize,
                                    (end - begin) * kSegmentSize, &desc, 1),
               "cuMemSetAccess");
}

void ExpandableSegment::unmap(size_t begin, size_t end) {
  // Unlike cudaFree, unmapping does not wait for the GPU: the allocator does.
  if (cudaStreamSynchronize(nullptr) != cudaSuccess) driver_check(CUDA_ERROR_UNKNOWN, "cudaStreamSynchronize");
  unmapHandles(begin, end);
}

void ExpandableSegment::unmapHandles(size_t begin, size_t end) {
  const DriverAPI* api = DriverAPI::get();
  for (size_t i = begin; i < end; ++i) {
    if (handles_[i] == 0) continue;
    driver_check(api->cuMemUnmap_(reinterpret_cast<CUdeviceptr>(base_) + i * kSegmentSize, kSegmentSize),
                 "cuMemUnmap");
    driver_check(api->cuMemRelease_(handles_[i]), "cuMemRelease");
    handles_[i] = 0;
  }
}

size_t ExpandableSegment::mapped_pages() const {
  size_t n = 0;
  for (CUmemGenericAllocationHandle h : handles_) n += h != 0 ? 1 : 0;
  return n;
}

}  // namespace CUDACachingAllocator::Native
}  // namespace c10::cuda
