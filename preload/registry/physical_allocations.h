// The physical allocations of CUDA's virtual memory management API
// (cuMemCreate), by handle, and where each is mapped (cuMemMap). It answers
// what a mapping places in the address space (the memory registry then
// classifies copies to that range) and when memory really goes: CUDA frees
// a physical allocation once it is released *and* no mapping of it is
// left, so a program that releases its handle right after mapping it (as
// the CUDA samples do) frees the memory with cuMemUnmap, and one that
// retains a handle (cuMemRetainAllocationHandle) releases it once more.
//
// Only those calls use it, and each already spends microseconds in the
// driver (PyTorch's expandable segments map 20 MiB at a time), so a mutex
// guards it. Sorted arrays, not node containers: hooks allocate nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>

#include "gpuscope_generated.h"

namespace gpuscope::registry {

struct PhysicalAllocation {
  uint64_t handle = 0;
  uint64_t bytes = 0;
  fb::MemoryKind kind = fb::MemoryKind::Unknown;  // Device or Pinned; Unknown: not seen created
  int16_t device = 0;
  uint32_t mappings = 0;
  // cuMemCreate's and each cuMemRetainAllocationHandle's, until released:
  // at 0 the memory goes with the last mapping.
  uint32_t references = 1;
};

class PhysicalAllocations {
 public:
  static constexpr size_t kCapacity = 1 << 14;  // live handles, and mappings; beyond it, counted and unknown

  void add(const PhysicalAllocation& allocation);
  PhysicalAllocation find(uint64_t handle) const;

  // Queries for the record of the call that is about to change the table
  // (the hook records before it tracks): whether cuMemRelease(handle) frees
  // the memory now, and which allocations cuMemUnmap of the range frees
  // (`freed` is called, with the table locked, for each).
  bool release_frees(uint64_t handle) const;
  template <class Freed> void unmap_frees(uint64_t address, uint64_t bytes, Freed&& freed) const;

  // The changes: mapping returns what was mapped (kind Unknown if the
  // handle was not seen created).
  void retain(uint64_t handle);
  void release(uint64_t handle);
  PhysicalAllocation map(uint64_t address, uint64_t bytes, uint64_t handle);
  void unmap(uint64_t address, uint64_t bytes);

  uint64_t overflows() const;

 private:
  struct Mapping {
    uint64_t address = 0, bytes = 0, handle = 0;
  };
  size_t position(uint64_t handle) const;  // first allocation with handle >= `handle`
  size_t first_mapping(uint64_t address) const;  // first mapping with address >= `address`
  size_t mappings_in(uint64_t address, uint64_t bytes, uint64_t handle) const;
  void erase_allocation(size_t at);

  mutable std::mutex mu_;
  size_t count_ = 0, mapping_count_ = 0;
  uint64_t overflows_ = 0;
  PhysicalAllocation allocations_[kCapacity];  // sorted by handle
  Mapping mappings_[kCapacity];                // sorted by address
};

template <class Freed>
void PhysicalAllocations::unmap_frees(uint64_t address, uint64_t bytes, Freed&& freed) const {
  std::lock_guard lock(mu_);
  for (size_t m = first_mapping(address); m < mapping_count_ && mappings_[m].address < address + bytes; ++m) {
    const uint64_t handle = mappings_[m].handle;
    const size_t at = position(handle);
    if (at == count_ || allocations_[at].handle != handle || allocations_[at].references != 0) continue;
    const bool first_in_range = mappings_in(address, mappings_[m].address - address, handle) == 0;
    if (first_in_range && mappings_in(address, bytes, handle) == allocations_[at].mappings) freed(allocations_[at]);
  }
}

// The process-wide table the hooks share.
PhysicalAllocations& physical_allocations();

}  // namespace gpuscope::registry
