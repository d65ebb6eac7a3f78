#include "stack_table.h"

#include <sys/mman.h>

#include <bit>
#include <cstring>

namespace gpuscope::stacks {
namespace {

// Anonymous, lazily backed: only the pages that stacks are written to become
// resident, so a generous capacity costs address space, not memory.
void* map_zeroed(size_t bytes) noexcept {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;

}  // namespace

uint64_t hash_frames(const uint64_t* frames, uint32_t count) noexcept {
  // Four independent multiply lanes: one dependent multiply chain over 32
  // frames took 60 ns, a quarter of the whole capture. Each lane step is a
  // bijection, so a change in any one frame changes its lane; the final
  // murmur finalizer spreads every bit into both the slot index (low bits)
  // and the tag (high bits).
  uint64_t a = count * kMul, b = 0x243F6A8885A308D3ull, c = 0x13198A2E03707344ull,
           d = 0xA4093822299F31D0ull;
  uint32_t i = 0;
  for (; i + 4 <= count; i += 4) {
    a = (a ^ frames[i]) * kMul;
    b = (b ^ frames[i + 1]) * kMul;
    c = (c ^ frames[i + 2]) * kMul;
    d = (d ^ frames[i + 3]) * kMul;
  }
  for (; i < count; ++i) a = (a ^ frames[i]) * kMul;
  uint64_t h = a ^ std::rotl(b, 16) ^ std::rotl(c, 32) ^ std::rotl(d, 48);
  h ^= h >> 33;
  h *= 0xFF51AFD7ED558CCDull;
  h ^= h >> 33;
  h *= 0xC4CEB9FE1A85EC53ull;
  h ^= h >> 33;
  return h;
}

StackTable::~StackTable() { release_mappings(); }

void StackTable::release_mappings() noexcept {
  void* maps[3] = {slots_, entries_, arena_};
  for (int i = 0; i < 3; ++i)
    if (maps[i] != nullptr) munmap(maps[i], mapped_bytes_[i]);
  slots_ = nullptr;
  entries_ = nullptr;
  arena_ = nullptr;
}

bool StackTable::init(uint32_t slots_log2, uint64_t arena_frames) noexcept {
  if (slots_ != nullptr || slots_log2 < 2 || slots_log2 > 32 || arena_frames == 0) return false;
  const uint64_t slots = uint64_t{1} << slots_log2;
  const uint64_t max = slots / 4 * 3;
  max_stacks_ = static_cast<uint32_t>(max > UINT32_MAX - 1 ? UINT32_MAX - 1 : max);
  arena_capacity_ = arena_frames;
  mapped_bytes_[0] = slots * sizeof(std::atomic<uint64_t>);
  mapped_bytes_[1] = (uint64_t{max_stacks_} + 1) * sizeof(Entry);
  mapped_bytes_[2] = arena_frames * sizeof(uint64_t);
  // Zero-filled pages are valid empty slots and Pending entries as they are.
  slots_ = static_cast<std::atomic<uint64_t>*>(map_zeroed(mapped_bytes_[0]));
  entries_ = static_cast<Entry*>(map_zeroed(mapped_bytes_[1]));
  arena_ = static_cast<uint64_t*>(map_zeroed(mapped_bytes_[2]));
  if (slots_ == nullptr || entries_ == nullptr || arena_ == nullptr) {
    release_mappings();
    return false;
  }
  slot_mask_ = slots - 1;
  return true;
}

bool StackTable::matches(uint64_t slot_value, uint32_t tag, const uint64_t* frames,
                         uint32_t count) const noexcept {
  if (static_cast<uint32_t>(slot_value >> 32) != tag) return false;
  const Entry& e = entries_[static_cast<uint32_t>(slot_value)];
  return e.count == count && std::memcmp(arena_ + e.offset, frames, count * sizeof(uint64_t)) == 0;
}

// Room in the arena and an id for a new stack, its frames copied in; 0 when
// either is exhausted. The relaxed pre-checks keep a full table from turning
// every later capture into a contended read-modify-write.
uint32_t StackTable::reserve_entry(const uint64_t* frames, uint32_t count) noexcept {
  if (arena_used_.load(std::memory_order_relaxed) + count > arena_capacity_ ||
      next_id_.load(std::memory_order_relaxed) > max_stacks_)
    return 0;
  const uint64_t offset = arena_used_.fetch_add(count, std::memory_order_relaxed);
  if (offset + count > arena_capacity_) return 0;
  const uint32_t id = next_id_.fetch_add(1, std::memory_order_relaxed);
  if (id > max_stacks_) return 0;
  std::memcpy(arena_ + offset, frames, count * sizeof(uint64_t));
  entries_[id].offset = offset;
  entries_[id].count = count;
  return id;
}

uint32_t StackTable::intern(const uint64_t* frames, uint32_t count, bool* inserted) noexcept {
  if (inserted != nullptr) *inserted = false;
  if (slots_ == nullptr || count == 0) return 0;
  const uint64_t h = hash_frames(frames, count);
  const uint32_t tag = static_cast<uint32_t>(h >> 32);
  size_t index = h & slot_mask_;
  for (size_t probes = 0; probes <= slot_mask_; ++probes, index = (index + 1) & slot_mask_) {
    const uint64_t v = slots_[index].load(std::memory_order_acquire);
    if (v == 0) return insert_from(index, tag, frames, count, inserted);
    if (matches(v, tag, frames, count)) return static_cast<uint32_t>(v);
  }
  full_drops_.fetch_add(1, std::memory_order_relaxed);  // unreachable at load <= 3/4
  return 0;
}

// Probing from an empty slot at `index`: claims the first empty slot for a
// newly reserved entry, unless a racing thread publishes the same stack
// first.
uint32_t StackTable::insert_from(size_t index, uint32_t tag, const uint64_t* frames,
                                 uint32_t count, bool* inserted) noexcept {
  const uint32_t id = reserve_entry(frames, count);
  if (id == 0) {
    full_drops_.fetch_add(1, std::memory_order_relaxed);
    return 0;
  }
  const uint64_t mine = (uint64_t{tag} << 32) | id;
  for (size_t probes = 0; probes <= slot_mask_; ++probes, index = (index + 1) & slot_mask_) {
    uint64_t v = 0;
    if (slots_[index].compare_exchange_strong(v, mine, std::memory_order_acq_rel,
                                              std::memory_order_acquire)) {
      entries_[id].state.store(EntryState::Published, std::memory_order_release);
      if (inserted != nullptr) *inserted = true;
      return id;
    }
    if (matches(v, tag, frames, count)) {
      entries_[id].state.store(EntryState::Abandoned, std::memory_order_release);
      return static_cast<uint32_t>(v);
    }
  }
  // Cannot happen while ids are capped below the slot count; if it did, the
  // entry must still be settled so the writer does not wait on it.
  entries_[id].state.store(EntryState::Abandoned, std::memory_order_release);
  full_drops_.fetch_add(1, std::memory_order_relaxed);
  return 0;
}

uint32_t StackTable::reserved() const noexcept {
  const uint32_t next = next_id_.load(std::memory_order_acquire);
  return next - 1 < max_stacks_ ? next - 1 : max_stacks_;
}

EntryState StackTable::state(uint32_t id) const noexcept {
  if (entries_ == nullptr || id == 0 || id > max_stacks_) return EntryState::Abandoned;
  return entries_[id].state.load(std::memory_order_acquire);
}

std::span<const uint64_t> StackTable::frames(uint32_t id) const noexcept {
  if (state(id) != EntryState::Published) return {};
  const Entry& e = entries_[id];
  return {arena_ + e.offset, e.count};
}

}  // namespace gpuscope::stacks
