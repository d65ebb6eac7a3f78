// Which memory the program got from CUDA: pinned and registered host
// ranges, managed ranges and device allocations. Copies ask it whether their
// host side is pageable, pinned or managed, and where a cudaMemcpyDefault
// goes; frees ask it how many bytes went away.
//
// Readers are hooks on the hot path: lock-free (a sequence lock — read the
// generation, search, read it again, retry on change), no allocation, no
// CUDA query. Writers are allocation hooks, serialized by a mutex (they
// follow a cudaMalloc or cudaFree, which cost microseconds anyway).
//
// A CUDA array is a handle, not an address range: a real driver's handles
// point into the process's own heap, so an array's range would swallow the
// program's pageable buffers allocated near it. An array is found at its
// handle only; its size is what its free gives back.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "gpuscope_generated.h"
#include "sequence_lock.h"

namespace gpuscope::registry {

struct MemoryRange {
  uint64_t begin = 0;
  uint64_t size = 0;
  fb::MemoryKind kind = fb::MemoryKind::Unknown;
  int16_t device = 0;  // where device memory lives (the allocating thread's device)
  uint32_t element_bytes = 0;  // a CUDA array's: what its copies' extents count (0: unknown)
};

class MemoryRegistry {
 public:
  static constexpr size_t kCapacity = 1 << 16;  // live ranges; beyond it, counted and unknown

  // Writers.
  void add(uint64_t begin, uint64_t size, fb::MemoryKind kind, int16_t device = 0, uint32_t element_bytes = 0);
  // Removes the range starting at `begin`; returns it (kind Unknown if none).
  MemoryRange remove(uint64_t begin);
  // Removes every range that starts in [begin, begin + size): cuMemUnmap of
  // several mappings at once.
  void remove_within(uint64_t begin, uint64_t size);

  // Reader: the range containing `address` (an array: the one whose handle
  // it is), or kind Unknown.
  MemoryRange find(uint64_t address) const noexcept;

  uint64_t overflows() const noexcept { return overflows_.load(std::memory_order_relaxed); }
  size_t size() const noexcept { return count_.load(std::memory_order_relaxed); }

 private:
  struct Slot {
    std::atomic<uint64_t> begin{0};
    std::atomic<uint64_t> size{0};
    std::atomic<uint8_t> kind{0};
    std::atomic<int16_t> device{0};
    std::atomic<uint32_t> element{0};  // in the padding: the slot stays 24 bytes
  };
  static_assert(sizeof(Slot) == 24);
  size_t lower_bound(uint64_t address, size_t count) const noexcept;
  void move_slot(size_t to, size_t from) noexcept;

  std::mutex writer_;
  SequenceLock sequence_;
  std::atomic<size_t> count_{0};
  std::atomic<uint64_t> overflows_{0};
  Slot slots_[kCapacity];  // sorted by begin
};

// The process-wide registry the hooks share.
MemoryRegistry& memory_registry();

}  // namespace gpuscope::registry
