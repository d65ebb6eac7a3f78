#include "memory_registry.h"

#include <type_traits>

namespace gpuscope::registry {

// Binary search for the first slot with begin > address, minus one.
size_t MemoryRegistry::lower_bound(uint64_t address, size_t count) const noexcept {
  size_t lo = 0, hi = count;
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (slots_[mid].begin.load(std::memory_order_relaxed) <= address) lo = mid + 1;
    else hi = mid;
  }
  return lo;  // slots [0, lo) start at or before address
}

void MemoryRegistry::move_slot(size_t to, size_t from) noexcept {
  slots_[to].begin.store(slots_[from].begin.load(std::memory_order_relaxed), std::memory_order_relaxed);
  slots_[to].size.store(slots_[from].size.load(std::memory_order_relaxed), std::memory_order_relaxed);
  slots_[to].kind.store(slots_[from].kind.load(std::memory_order_relaxed), std::memory_order_relaxed);
  slots_[to].device.store(slots_[from].device.load(std::memory_order_relaxed), std::memory_order_relaxed);
  slots_[to].element.store(slots_[from].element.load(std::memory_order_relaxed), std::memory_order_relaxed);
}

void MemoryRegistry::add(uint64_t begin, uint64_t size, fb::MemoryKind kind, int16_t device, uint32_t element_bytes) {
  if (size == 0) return;
  std::lock_guard lock(writer_);
  const size_t count = count_.load(std::memory_order_relaxed);
  size_t at = lower_bound(begin, count);
  const bool replaces = at > 0 && slots_[at - 1].begin.load(std::memory_order_relaxed) == begin;
  if (!replaces && count == kCapacity) {
    overflows_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const SequenceLock::Write write(sequence_);
  if (replaces) {
    --at;
  } else {
    for (size_t i = count; i > at; --i) move_slot(i, i - 1);
    count_.store(count + 1, std::memory_order_relaxed);
  }
  slots_[at].begin.store(begin, std::memory_order_relaxed);
  slots_[at].size.store(size, std::memory_order_relaxed);
  slots_[at].kind.store(static_cast<uint8_t>(kind), std::memory_order_relaxed);
  slots_[at].device.store(device, std::memory_order_relaxed);
  slots_[at].element.store(element_bytes, std::memory_order_relaxed);
}

MemoryRange MemoryRegistry::remove(uint64_t begin) {
  std::lock_guard lock(writer_);
  const size_t count = count_.load(std::memory_order_relaxed);
  const size_t after = lower_bound(begin, count);
  if (after == 0 || slots_[after - 1].begin.load(std::memory_order_relaxed) != begin) return {};
  const size_t at = after - 1;
  const MemoryRange removed{begin, slots_[at].size.load(std::memory_order_relaxed),
                            static_cast<fb::MemoryKind>(slots_[at].kind.load(std::memory_order_relaxed)),
                            slots_[at].device.load(std::memory_order_relaxed),
                            slots_[at].element.load(std::memory_order_relaxed)};
  const SequenceLock::Write write(sequence_);
  for (size_t i = at; i + 1 < count; ++i) move_slot(i, i + 1);
  count_.store(count - 1, std::memory_order_relaxed);
  return removed;
}

void MemoryRegistry::remove_within(uint64_t begin, uint64_t size) {
  if (size == 0 || begin == 0) return;
  std::lock_guard lock(writer_);
  const size_t count = count_.load(std::memory_order_relaxed);
  const size_t first = lower_bound(begin - 1, count), last = lower_bound(begin + size - 1, count);
  if (first == last) return;
  const SequenceLock::Write write(sequence_);
  for (size_t i = last; i < count; ++i) move_slot(first + i - last, i);
  count_.store(count - (last - first), std::memory_order_relaxed);
}

MemoryRange MemoryRegistry::find(uint64_t address) const noexcept {
  const MemoryRange found = sequence_.read(
      [&] {
        const size_t after = lower_bound(address, count_.load(std::memory_order_relaxed));
        MemoryRange r;
        if (after == 0) return r;
        const Slot& s = slots_[after - 1];
        r.begin = s.begin.load(std::memory_order_relaxed);
        r.size = s.size.load(std::memory_order_relaxed);
        r.kind = static_cast<fb::MemoryKind>(s.kind.load(std::memory_order_relaxed));
        r.device = s.device.load(std::memory_order_relaxed);
        r.element_bytes = s.element.load(std::memory_order_relaxed);
        return r;
      },
      MemoryRange{});
  const bool inside = found.kind == fb::MemoryKind::Array ? address == found.begin : address - found.begin < found.size;
  return inside ? found : MemoryRange{};
}

// In .bss, like kernel_names(): no 1.5 MiB of zeroing on the first
// allocation, and still there for hooks that run at exit.
static_assert(std::is_trivially_destructible_v<MemoryRegistry>);
MemoryRegistry& memory_registry() {
  static constinit MemoryRegistry registry;
  return registry;
}

}  // namespace gpuscope::registry
