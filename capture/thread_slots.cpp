#include "thread_slots.h"

#include <sys/mman.h>

#include <bit>
#include <memory>

namespace gpuscope::capture {

SlotPool::~SlotPool() {
  if (slots_ != nullptr) {
    std::destroy_n(slots_, count_);
    munmap(slots_, slot_bytes());
  }
  if (memory_ != nullptr) munmap(memory_, mapped_bytes_);
}

bool SlotPool::create(uint32_t slots, size_t ring_bytes) {
  ring_bytes_ = std::bit_ceil(std::max<size_t>(ring_bytes, 4096));
  mapped_bytes_ = (ring_bytes_ + sizeof(CallCounterPage)) * slots;
  // MAP_NORESERVE: reserve address space for every possible thread, but only
  // the pages a thread actually writes cost memory.
  void* mem = mmap(nullptr, mapped_bytes_, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mem == MAP_FAILED) return false;
  memory_ = static_cast<std::byte*>(mem);
  // The slots themselves (576 bytes each, 144 KiB for 256) are all written
  // here: MAP_POPULATE has the kernel supply their pages in one call
  // instead of a page fault for each, a tenth of a millisecond less at
  // every traced start in a VM.
  void* table = mmap(nullptr, sizeof(ThreadSlot) * slots, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (table == MAP_FAILED) return false;  // no slots: claim() finds none, the destructor unmaps the rings
  count_ = slots;
  slots_ = static_cast<ThreadSlot*>(table);
  std::uninitialized_value_construct_n(slots_, slots);
  auto* counters = reinterpret_cast<CallCounterPage*>(memory_ + ring_bytes_ * slots);
  for (uint32_t i = 0; i < slots; ++i) {
    slots_[i].ring.attach(memory_ + i * ring_bytes_, ring_bytes_);
    slots_[i].counters = counters + i;
  }
  return true;
}

ThreadSlot* SlotPool::claim(uint32_t tid) noexcept {
  for (uint32_t i = 0; i < count_; ++i) {
    ThreadSlot& s = slots_[i];
    SlotState expected = SlotState::Free;
    if (s.state.load(std::memory_order_relaxed) != SlotState::Free) continue;
    if (!s.state.compare_exchange_strong(expected, SlotState::Owned, std::memory_order_acquire))
      continue;
    s.tid = tid;
    s.correlation_prefix = (next_ordinal_.fetch_add(1, std::memory_order_relaxed) + 1) << 40;
    s.next_sequence = 0;
    s.poll_pending = 0;
    return &s;
  }
  return nullptr;
}

void SlotPool::recycle(ThreadSlot& slot, uint64_t* retired_drops) noexcept {
  for (size_t r = 0; r < kDropReasonCount; ++r) {
    retired_drops[r] += slot.drops[r].get();
    slot.drops[r].value.store(0, std::memory_order_relaxed);
  }
  const size_t index = static_cast<size_t>(&slot - slots_);
  // An exited thread's pages go back to the system: thread churn must not
  // leave the process holding one ring per thread it ever had.
  madvise(memory_ + index * ring_bytes_, ring_bytes_, MADV_DONTNEED);
  slot.ring.attach(memory_ + index * ring_bytes_, ring_bytes_);
  madvise(slot.counters, sizeof(CallCounterPage), MADV_DONTNEED);  // zero again: the next thread starts at 0
  slot.tid = 0;
  slot.poll.reset();  // taken by now (Writer::drain_all); a run left over belongs to no thread
  // Release: the next owner's acquire CAS sees the reset ring and counters.
  slot.state.store(SlotState::Free, std::memory_order_release);
}

}  // namespace gpuscope::capture
