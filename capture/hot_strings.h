// Interning from the hot path: NVTX messages arrive with every range and
// mark, so they cannot take StringTable's mutex or allocate. This table is
// lock-free and fixed-size: open addressing over kSlots slots keyed by a
// 64-bit hash of the (truncated) text, the text copied once into a bump
// arena. A thread that finds a slot being filled by another waits a bounded
// number of spins, then gives up (Miss::SlotBusy); a full table or arena
// answers 0 too (Miss::TableFull). The caller counts the drop under its
// reason and keeps the record unnamed.
//
// Ids come from the StringTable's id space (one counter for both), and the
// writer collects newly published strings through StringTable::take_pending,
// after draining the records that use them.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace gpuscope::capture {

class HotStrings {
 public:
  static constexpr size_t kSlots = 8192;                // power of two
  static constexpr size_t kArenaBytes = 1 << 20;        // text of all interned strings
  static constexpr size_t kMaxTextBytes = 512;          // longer messages are truncated
  static constexpr uint32_t kProbeLimit = 64;

  // The slots and the arena are one anonymous mapping: its pages are zero
  // (every slot free) and cost nothing until an intern touches them.
  // Zeroing 8192 slots in a constructor faulted in their 48 pages at every
  // traced start (docs/performance.md). Without the mapping, nothing is
  // interned here (0: the caller's fallback).
  HotStrings() noexcept;
  ~HotStrings();
  HotStrings(const HotStrings&) = delete;
  HotStrings& operator=(const HotStrings&) = delete;

  // Why a non-empty text got 0.
  enum class Miss : uint8_t { TableFull, SlotBusy };

  // Id of `text` (truncated to kMaxTextBytes on a UTF-8 boundary), taking a
  // new id from `next_id` when the text is new. 0 for an empty text or when
  // the table cannot take it (then *miss says why, if given). Lock-free,
  // allocation-free.
  uint32_t intern(std::string_view text, std::atomic<uint32_t>& next_id, Miss* miss = nullptr) noexcept;

  // Writer side (one caller at a time): strings published since the last
  // call, or every published string when `all`.
  void collect(bool all, std::vector<std::pair<uint32_t, std::string>>* out);

  // Strings published so far (tests, statistics).
  uint32_t size() const noexcept { return published_.load(std::memory_order_acquire); }

  static std::string_view truncate(std::string_view text) noexcept;

 private:
  static constexpr uint32_t kFilling = 0;          // slot claimed, text not yet published
  static constexpr uint32_t kUnusable = UINT32_MAX;  // claimed, but the arena was full

  // All zero bytes is a free slot (the mapping's pages start so); `hash`
  // and `id` are shared between threads through std::atomic_ref.
  struct Slot {
    uint64_t hash;     // 0: free
    uint32_t id;       // kFilling until published
    uint32_t length;   // written before `id` is published
    uint32_t offset;
    bool collected;    // writer only
  };
  static_assert(std::is_trivially_default_constructible_v<Slot>);
  static_assert(kFilling == 0, "a zero id reads as not yet published");

  uint32_t fill(Slot& slot, std::string_view text, std::atomic<uint32_t>& next_id) noexcept;
  uint32_t await_published(Slot& slot) const noexcept;
  bool holds(const Slot& slot, std::string_view text) const noexcept;

  static constexpr size_t kMappedBytes = kSlots * sizeof(Slot) + kArenaBytes;

  static std::atomic_ref<uint64_t> hash_of(Slot& s) noexcept { return std::atomic_ref<uint64_t>(s.hash); }
  static std::atomic_ref<uint32_t> id_of(Slot& s) noexcept { return std::atomic_ref<uint32_t>(s.id); }

  Slot* slots_ = nullptr;  // kSlots of them, then the arena
  char* arena_ = nullptr;
  std::atomic<uint32_t> arena_used_{0};
  std::atomic<uint32_t> published_{0};
  uint32_t collected_count_ = 0;  // writer only
};

}  // namespace gpuscope::capture
