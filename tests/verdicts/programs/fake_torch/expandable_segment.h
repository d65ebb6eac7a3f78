// PyTorch's expandable segments (PYTORCH_CUDA_ALLOC_CONF=
// expandable_segments:True) in the fake libtorch: one reserved address range
// per device, backed by 2 MiB pages of physical memory that are mapped as
// the allocator needs them and unmapped when it gives memory back. The
// driver functions come from the runtime (cudaGetDriverEntryPointByVersion),
// as c10::cuda::DriverAPI gets them.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <vector>

namespace c10::cuda {

struct DriverAPI {
  decltype(&cuMemAddressReserve) cuMemAddressReserve_ = nullptr;
  decltype(&cuMemAddressFree) cuMemAddressFree_ = nullptr;
  decltype(&cuMemCreate) cuMemCreate_ = nullptr;
  decltype(&cuMemRelease) cuMemRelease_ = nullptr;
  decltype(&cuMemMap) cuMemMap_ = nullptr;
  decltype(&cuMemUnmap) cuMemUnmap_ = nullptr;
  decltype(&cuMemSetAccess) cuMemSetAccess_ = nullptr;
  static const DriverAPI* get();
};

namespace CUDACachingAllocator::Native {

bool expandable_segments_enabled();  // reads PYTORCH_CUDA_ALLOC_CONF

class ExpandableSegment {
 public:
  static constexpr size_t kSegmentSize = 2u << 20;
  explicit ExpandableSegment(size_t max_bytes);
  ~ExpandableSegment();
  char* ptr() const { return base_; }
  // Pages [begin, end) of the range, created and mapped, or unmapped and
  // released (after the stream's work on them is done).
  void map(size_t begin, size_t end);
  void unmap(size_t begin, size_t end);
  size_t mapped_pages() const;

 private:
  void unmapHandles(size_t begin, size_t end);
  char* base_ = nullptr;
  std::vector<CUmemGenericAllocationHandle> handles_;  // 0: not mapped
};

}  // namespace CUDACachingAllocator::Native
}  // namespace c10::cuda
