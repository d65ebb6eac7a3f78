// Kernel names by the handle a launch passes: the host stub address that
// __cudaRegisterFunction pairs with the device name (runtime launches), or
// the CUfunction (driver launches, named through cuModuleGetFunction or
// cuFuncGetName). Looked up on every launch: an insert-only open-addressing
// table with atomic slots, so lookups take no lock and never allocate.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace gpuscope::registry {

class KernelNames {
 public:
  static constexpr size_t kCapacity = 1 << 16;  // distinct kernels; beyond it, unnamed

  // Associates `handle` with interned name `name_id` (first association wins).
  void insert(const void* handle, uint32_t name_id) noexcept;
  // The name id for `handle`, or 0 when unknown.
  uint32_t find(const void* handle) const noexcept;

 private:
  struct Slot {
    std::atomic<uintptr_t> key{0};
    std::atomic<uint32_t> value{0};
  };
  static size_t home(uintptr_t key) noexcept;
  Slot slots_[kCapacity];
};

KernelNames& kernel_names();

}  // namespace gpuscope::registry
