// CUPTI correlation id -> gpuscope correlation id, written by CUPTI's API
// callback on the application thread (inside the hooked call) and read by
// the writer when it converts device records. Lock-free and fixed-size:
// CUPTI numbers API calls sequentially, so a direct-mapped table indexed by
// the id keeps the last kSlots calls; a record whose call was overwritten
// (more than kSlots CUDA calls between a launch and the conversion of its
// record) finds another id in the slot and gets correlation 0, never a
// wrong one. (Two calls kSlots apart writing one slot at the same instant
// could still pair wrongly; that takes a million calls in flight at once.)
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>

namespace gpuscope::cupti {

class CorrelationTable {
 public:
  static constexpr uint32_t kSlots = 1u << 20;  // 16 MiB, touched only as used

  // calloc: zero pages are mapped lazily, so an idle table costs no memory
  // (all-zero bytes are valid atomics holding 0).
  CorrelationTable() : slots_(static_cast<Slot*>(std::calloc(kSlots, sizeof(Slot)))) {}
  bool usable() const noexcept { return slots_ != nullptr; }

  void put(uint32_t cupti_id, uint64_t ours) noexcept {
    if (cupti_id == 0 || !slots_) return;
    Slot& s = slots_.get()[cupti_id & (kSlots - 1)];
    s.tag.store(0, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    s.value.store(ours, std::memory_order_relaxed);
    s.tag.store(cupti_id, std::memory_order_release);
  }

  // 0 when unknown.
  uint64_t get(uint32_t cupti_id) const noexcept {
    if (cupti_id == 0 || !slots_) return 0;
    const Slot& s = slots_.get()[cupti_id & (kSlots - 1)];
    if (s.tag.load(std::memory_order_acquire) != cupti_id) return 0;
    const uint64_t value = s.value.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    return s.tag.load(std::memory_order_relaxed) == cupti_id ? value : 0;
  }

 private:
  struct Slot {
    std::atomic<uint32_t> tag{0};
    std::atomic<uint64_t> value{0};
  };
  struct Free {
    void operator()(Slot* p) const noexcept { std::free(p); }
  };
  std::unique_ptr<Slot, Free> slots_;
};

}  // namespace gpuscope::cupti
