#include "kernel_names.h"

#include <type_traits>

namespace gpuscope::registry {

size_t KernelNames::home(uintptr_t key) noexcept {
  // Fibonacci hashing: host stubs are 16-byte aligned and clustered.
  return static_cast<size_t>((static_cast<uint64_t>(key) * 0x9E3779B97F4A7C15ull) >> 48) & (kCapacity - 1);
}

void KernelNames::insert(const void* handle, uint32_t name_id) noexcept {
  const auto key = reinterpret_cast<uintptr_t>(handle);
  if (key == 0 || name_id == 0) return;
  for (size_t probe = 0, i = home(key); probe < kCapacity; ++probe, i = (i + 1) & (kCapacity - 1)) {
    uintptr_t expected = 0;
    const uintptr_t current = slots_[i].key.load(std::memory_order_acquire);
    if (current == key) return;  // first association wins
    if (current != 0) continue;
    if (slots_[i].key.compare_exchange_strong(expected, key, std::memory_order_acq_rel)) {
      slots_[i].value.store(name_id, std::memory_order_release);
      return;
    }
    if (expected == key) return;
  }
}

uint32_t KernelNames::find(const void* handle) const noexcept {
  const auto key = reinterpret_cast<uintptr_t>(handle);
  if (key == 0) return 0;
  for (size_t probe = 0, i = home(key); probe < kCapacity; ++probe, i = (i + 1) & (kCapacity - 1)) {
    const uintptr_t current = slots_[i].key.load(std::memory_order_acquire);
    if (current == key) return slots_[i].value.load(std::memory_order_acquire);  // 0 while being filled
    if (current == 0) return 0;
  }
  return 0;
}

// Constant-initialized, so the 1 MiB table lives in .bss: the loader maps
// zero pages and only the slots a program touches ever become resident.
// (A heap table was zeroed at start-up: ~256 page faults on the first
// launch of every traced process, docs/performance.md.) Trivially
// destructible, so launches at exit still find it.
static_assert(std::is_trivially_destructible_v<KernelNames>);
KernelNames& kernel_names() {
  static constinit KernelNames names;
  return names;
}

}  // namespace gpuscope::registry
