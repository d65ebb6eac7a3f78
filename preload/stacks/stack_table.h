// The deduplicating stack table behind capture_stack_id(): an insert-only,
// lock-free hash set of frame sequences, each given a dense id (1, 2, ...).
//
// Memory is mapped once by init() and never grows, so the hot path neither
// locks, allocates nor makes a syscall:
//   slots_   open-addressed hash index, 2^n words, each 0 (empty) or
//            (hash tag << 32 | id); linear probing; a slot, once set, never
//            changes;
//   entries_ per id: where its frames lie in the arena, and a publish state;
//   arena_   every stack's frames, back to back.
//
// Insert protocol (any number of threads):
//   1. probe for an equal stack: load a slot (acquire), on a tag match
//      compare the frames the entry points at; found -> its id;
//   2. at the first empty slot: reserve arena frames and an id (one
//      fetch_add each), copy the frames, fill the entry, then CAS the slot
//      0 -> (tag|id) (release). The CAS is the publication to other
//      capturing threads: whoever loads the slot sees frames and entry;
//   3. CAS lost: if the winner holds the same stack, our entry is marked
//      Abandoned and the winner's id returned; otherwise probing goes on
//      with the same reserved id;
//   4. the entry's state is then set to Published (release) for the writer.
// Full table or arena -> id 0 and a counted drop; stacks already in the
// table are still found. The load factor is capped at 3/4 of the slots, so
// a reserved id always finds an empty slot.
//
// Reader side (writer thread): ids 1..reserved() each end up Published or
// Abandoned; an entry still Pending belongs to an insert in progress and is
// looked at again on the next poll.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace gpuscope::stacks {

enum class EntryState : uint32_t { Pending = 0, Published = 1, Abandoned = 2 };

class StackTable {
 public:
  StackTable() = default;
  ~StackTable();
  StackTable(const StackTable&) = delete;
  StackTable& operator=(const StackTable&) = delete;

  // Maps the table: 2^slots_log2 hash slots (at most 3/4 of them used, and
  // never more than 2^32-1 ids) and room for arena_frames frames in all.
  // False when the mapping failed (the table then stays unusable).
  bool init(uint32_t slots_log2, uint64_t arena_frames) noexcept;
  bool ready() const noexcept { return slots_ != nullptr; }

  // The id of `frames` (1..), inserting it if new; 0 when the table or the
  // arena is full (counted in full_drops()) or count is 0. *inserted (when
  // given) says whether this call added the entry.
  uint32_t intern(const uint64_t* frames, uint32_t count, bool* inserted = nullptr) noexcept;

  // Writer side. Ids reserved so far (some may still be Pending).
  uint32_t reserved() const noexcept;
  EntryState state(uint32_t id) const noexcept;
  // The frames of a Published id; empty for any other.
  std::span<const uint64_t> frames(uint32_t id) const noexcept;

  uint64_t full_drops() const noexcept { return full_drops_.load(std::memory_order_relaxed); }
  uint32_t max_stacks() const noexcept { return max_stacks_; }

 private:
  struct Entry {
    uint64_t offset;  // first frame in the arena
    uint32_t count;
    std::atomic<EntryState> state;
  };

  bool matches(uint64_t slot_value, uint32_t tag, const uint64_t* frames,
               uint32_t count) const noexcept;
  uint32_t reserve_entry(const uint64_t* frames, uint32_t count) noexcept;
  uint32_t insert_from(size_t index, uint32_t tag, const uint64_t* frames,
                       uint32_t count, bool* inserted) noexcept;
  void release_mappings() noexcept;

  std::atomic<uint64_t>* slots_ = nullptr;
  Entry* entries_ = nullptr;  // index = id; entry 0 unused
  uint64_t* arena_ = nullptr;
  size_t slot_mask_ = 0;
  uint32_t max_stacks_ = 0;
  uint64_t arena_capacity_ = 0;
  size_t mapped_bytes_[3] = {0, 0, 0};
  // Each on its own cache line: writers of new stacks bump them, while
  // lookups of known stacks never touch them.
  alignas(64) std::atomic<uint64_t> arena_used_{0};
  alignas(64) std::atomic<uint32_t> next_id_{1};
  alignas(64) std::atomic<uint64_t> full_drops_{0};
};

// Writer side: each entry once, as it is published. Ids settle out of order
// (an insert may still be in progress on some thread), so `settled_`
// remembers which are done above the contiguous low-water mark.
class PublishedScan {
 public:
  template <class Emit> void scan(const StackTable& table, Emit&& emit) {
    const uint32_t reserved = table.reserved();
    if (settled_.size() < size_t{reserved} + 1) settled_.resize(size_t{reserved} + 1, 0);
    for (uint32_t id = low_water_ + 1; id <= reserved; ++id) {
      if (settled_[id] != 0) continue;
      const EntryState state = table.state(id);
      if (state == EntryState::Pending) continue;
      settled_[id] = 1;
      if (state == EntryState::Published) emit(id, table.frames(id));
    }
    while (low_water_ < reserved && settled_[low_water_ + 1] != 0) ++low_water_;
  }

 private:
  std::vector<uint8_t> settled_;  // by id
  uint32_t low_water_ = 0;        // every id up to here is settled
};

// The hash of a frame sequence (exposed for tests).
uint64_t hash_frames(const uint64_t* frames, uint32_t count) noexcept;

}  // namespace gpuscope::stacks
