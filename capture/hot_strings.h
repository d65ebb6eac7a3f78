// Interning from the hot path: NVTX messages arrive with every range and
// mark, so they cannot take StringTable's mutex or allocate. This table is
// lock-free and fixed-size: open addressing over kSlots slots keyed by a
// 64-bit hash of the (truncated) text, the text copied once into a bump
// arena. A thread that finds a slot being filled by another waits a bounded
// number of spins, then gives up; a full table or arena answers 0 (the
// caller counts a StringTableFull drop and keeps the record unnamed).
//
// Ids come from the StringTable's id space (one counter for both), and the
// writer collects newly published strings through StringTable::take_pending,
// after draining the records that use them.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpuscope::capture {

class HotStrings {
 public:
  static constexpr size_t kSlots = 8192;                // power of two
  static constexpr size_t kArenaBytes = 1 << 20;        // text of all interned strings
  static constexpr size_t kMaxTextBytes = 512;          // longer messages are truncated
  static constexpr uint32_t kProbeLimit = 64;

  // Non-defaulted on purpose: the arena stays untouched (not resident) until used.
  HotStrings() noexcept {}
  HotStrings(const HotStrings&) = delete;
  HotStrings& operator=(const HotStrings&) = delete;

  // Id of `text` (truncated to kMaxTextBytes on a UTF-8 boundary), taking a
  // new id from `next_id` when the text is new. 0 for an empty text or when
  // the table cannot take it. Lock-free, allocation-free.
  uint32_t intern(std::string_view text, std::atomic<uint32_t>& next_id) noexcept;

  // Writer side (one caller at a time): strings published since the last
  // call, or every published string when `all`.
  void collect(bool all, std::vector<std::pair<uint32_t, std::string>>* out);

  // Strings published so far (tests, statistics).
  uint32_t size() const noexcept { return published_.load(std::memory_order_acquire); }

  static std::string_view truncate(std::string_view text) noexcept;

 private:
  static constexpr uint32_t kFilling = 0;          // slot claimed, text not yet published
  static constexpr uint32_t kUnusable = UINT32_MAX;  // claimed, but the arena was full

  struct Slot {
    std::atomic<uint64_t> hash{0};  // 0: free
    std::atomic<uint32_t> id{kFilling};
    uint32_t length = 0;            // written before `id` is published
    uint32_t offset = 0;
    bool collected = false;         // writer only
  };

  uint32_t fill(Slot& slot, std::string_view text, std::atomic<uint32_t>& next_id) noexcept;
  uint32_t await_published(const Slot& slot) const noexcept;
  bool holds(const Slot& slot, std::string_view text) const noexcept;

  Slot slots_[kSlots];
  std::atomic<uint32_t> arena_used_{0};
  std::atomic<uint32_t> published_{0};
  uint32_t collected_count_ = 0;  // writer only
  char arena_[kArenaBytes];
};

}  // namespace gpuscope::capture
