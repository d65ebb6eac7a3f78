// A fixed pool of per-thread ring buffers, reserved once per session.
//
// A traced thread claims a slot on its first event (one CAS, no allocation:
// the memory was mapped when the session started, and only pages that are
// written become resident). When the thread exits its slot is retired; the
// writer drains it and returns it to the pool. Threads beyond the pool's
// size record nothing and their events are counted as NoBuffer drops.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "gpuscope_generated.h"
#include "call_counts.h"
#include "poll_run.h"
#include "ring.h"

namespace gpuscope::capture {

inline constexpr size_t kDropReasonCount = 6;  // fb::DropReason values
static_assert(kDropReasonCount == static_cast<size_t>(fb::DropReason::MAX) + 1);

// A counter written by exactly one thread and read by the writer: a relaxed
// load+store pair instead of a locked read-modify-write.
struct SingleWriterCounter {
  std::atomic<uint64_t> value{0};
  void add(uint64_t n = 1) noexcept {
    value.store(value.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  uint64_t get() const noexcept { return value.load(std::memory_order_relaxed); }
};

enum class SlotState : uint32_t { Free = 0, Owned = 1, Retired = 2 };

struct ThreadSlot {
  SpscRing ring;
  std::atomic<SlotState> state{SlotState::Free};
  uint32_t tid = 0;
  uint64_t correlation_prefix = 0;  // thread ordinal << 40
  uint64_t next_sequence = 0;       // producer-owned
  // Owner-only: the thread has published a run of polls (poll_run.h). Next
  // to next_sequence, which every call touches: the check costs no miss.
  uint8_t poll_pending = 0;
  SingleWriterCounter drops[kDropReasonCount];
  CallCounterPage* counters = nullptr;  // successful nested calls (call_counts.h)
  PollRecord poll_own{};  // owner-only: the thread's pending run as it last published it
  PollRun poll;           // that run, published for the writer (poll_run.h)

  uint64_t next_correlation_id() noexcept { return correlation_prefix | ++next_sequence; }
};

class SlotPool {
 public:
  SlotPool() = default;
  SlotPool(const SlotPool&) = delete;
  SlotPool& operator=(const SlotPool&) = delete;
  ~SlotPool();

  // Maps `slots` rings of `ring_bytes` (rounded up to a power of two), and
  // a page of call counters for each.
  bool create(uint32_t slots, size_t ring_bytes);

  // Hot-path-safe: claims a free slot for the calling thread or returns null.
  ThreadSlot* claim(uint32_t tid) noexcept;

  uint32_t size() const noexcept { return count_; }
  ThreadSlot& at(uint32_t i) noexcept { return slots_[i]; }
  size_t ring_bytes() const noexcept { return ring_bytes_; }

  // Writer side: returns a drained, retired slot to the pool, folding its
  // drop counters into `retired_drops` first.
  void recycle(ThreadSlot& slot, uint64_t* retired_drops) noexcept;

 private:
  size_t slot_bytes() const noexcept { return sizeof(ThreadSlot) * count_; }

  ThreadSlot* slots_ = nullptr;  // count_ of them, in a mapping of their own
  std::byte* memory_ = nullptr;
  size_t mapped_bytes_ = 0;
  size_t ring_bytes_ = 0;
  uint32_t count_ = 0;
  std::atomic<uint64_t> next_ordinal_{0};
};

}  // namespace gpuscope::capture
