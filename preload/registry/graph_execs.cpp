#include "graph_execs.h"

#include <type_traits>

namespace gpuscope::registry {
namespace {

constexpr uint32_t kConditionalBit = 1u << 31;

uint32_t saturating_add(uint32_t a, int64_t delta) {
  const int64_t v = static_cast<int64_t>(a) + delta;
  return v < 0 ? 0 : v > INT32_MAX ? INT32_MAX : static_cast<uint32_t>(v);
}

}  // namespace

GraphWork& GraphWork::operator+=(const GraphWork& o) noexcept {
  kernels = saturating_add(kernels, o.kernels);
  copies = saturating_add(copies, o.copies);
  memsets = saturating_add(memsets, o.memsets);
  other = saturating_add(other, o.other);
  conditional = conditional || o.conditional;
  return *this;
}

void count_node(GraphWork* work, int type) noexcept {
  switch (static_cast<GraphNodeType>(type)) {
    case GraphNodeType::Kernel: work->kernels = saturating_add(work->kernels, 1); return;
    case GraphNodeType::Memcpy: work->copies = saturating_add(work->copies, 1); return;
    case GraphNodeType::Memset: work->memsets = saturating_add(work->memsets, 1); return;
    case GraphNodeType::Conditional: work->conditional = true; break;
    default: break;
  }
  work->other = saturating_add(work->other, 1);
}

size_t GraphExecs::home(uint64_t exec) noexcept {
  // Fibonacci hashing: handles are heap pointers, 16-byte aligned.
  return static_cast<size_t>((exec * 0x9E3779B97F4A7C15ull) >> 52) & (kCapacity - 1);
}

size_t GraphExecs::locate(uint64_t exec) const noexcept {
  for (size_t probe = 0, i = home(exec); probe < kCapacity; ++probe, i = (i + 1) & (kCapacity - 1)) {
    const uint64_t key = slots_[i].key.load(std::memory_order_relaxed);
    if (key == exec) return i;
    if (key == kEmpty) break;
  }
  return kCapacity;
}

void GraphExecs::store(Slot& slot, const GraphWork& w) noexcept {
  slot.nodes.store(w.kernels | uint64_t{w.copies} << 32, std::memory_order_relaxed);
  const uint32_t other = (w.other & ~kConditionalBit) | (w.conditional ? kConditionalBit : 0);
  slot.more.store(w.memsets | uint64_t{other} << 32, std::memory_order_relaxed);
}

GraphWork GraphExecs::load(const Slot& slot) noexcept {
  const uint64_t nodes = slot.nodes.load(std::memory_order_relaxed);
  const uint64_t more = slot.more.load(std::memory_order_relaxed);
  GraphWork w;
  w.kernels = static_cast<uint32_t>(nodes);
  w.copies = static_cast<uint32_t>(nodes >> 32);
  w.memsets = static_cast<uint32_t>(more);
  w.other = static_cast<uint32_t>(more >> 32) & ~kConditionalBit;
  w.conditional = (static_cast<uint32_t>(more >> 32) & kConditionalBit) != 0;
  w.known = true;
  return w;
}

void GraphExecs::set(uint64_t exec, const GraphWork& work) {
  if (exec == kEmpty || exec == kErased) return;
  std::lock_guard lock(writer_);
  size_t at = locate(exec);
  if (at == kCapacity) {
    // A new exec takes the first reusable slot on its probe path.
    for (size_t probe = 0, i = home(exec); probe < kCapacity; ++probe, i = (i + 1) & (kCapacity - 1)) {
      const uint64_t key = slots_[i].key.load(std::memory_order_relaxed);
      if (key == kEmpty || key == kErased) {
        at = i;
        break;
      }
    }
  }
  if (at == kCapacity) {
    overflows_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const SequenceLock::Write write(sequence_);
  store(slots_[at], work);
  slots_[at].key.store(exec, std::memory_order_relaxed);
}

void GraphExecs::adjust(uint64_t exec, int type, int delta) {
  std::lock_guard lock(writer_);
  const size_t at = locate(exec);
  if (at == kCapacity) return;
  GraphWork w = load(slots_[at]);
  GraphWork one;
  count_node(&one, type);
  w.kernels = saturating_add(w.kernels, int64_t{one.kernels} * delta);
  w.copies = saturating_add(w.copies, int64_t{one.copies} * delta);
  w.memsets = saturating_add(w.memsets, int64_t{one.memsets} * delta);
  w.other = saturating_add(w.other, int64_t{one.other} * delta);
  const SequenceLock::Write write(sequence_);
  store(slots_[at], w);
}

void GraphExecs::erase(uint64_t exec) {
  std::lock_guard lock(writer_);
  const size_t at = locate(exec);
  if (at == kCapacity) return;
  const SequenceLock::Write write(sequence_);
  slots_[at].key.store(kErased, std::memory_order_relaxed);  // keeps later probe paths intact
}

GraphWork GraphExecs::find(uint64_t exec) const noexcept {
  if (exec == kEmpty || exec == kErased) return {};
  return sequence_.read(
      [&] {
        const size_t at = locate(exec);
        return at == kCapacity ? GraphWork{} : load(slots_[at]);
      },
      GraphWork{});
}

// In .bss, like kernel_names(): nothing to zero at start-up, and still there
// for launches at exit.
static_assert(std::is_trivially_destructible_v<GraphExecs>);
GraphExecs& graph_execs() {
  static constinit GraphExecs execs;
  return execs;
}

}  // namespace gpuscope::registry
