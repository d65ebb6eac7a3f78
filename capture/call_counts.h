// Nested calls that succeed are counted, not recorded.
//
// A runtime call makes its driver call on the same thread (cudaLaunchKernel
// -> cuLaunchKernel): a second hook level whose ApiCall record adds nothing
// the outer call does not say, yet cost ~270 of the ~645 instructions
// gpuscope spent per launch (docs/performance.md). So a nested call (depth
// > 0) that succeeds only bumps a per-thread counter for its function; the
// writer turns counter deltas into CallCount entries. A nested call that
// fails is still a full ApiCall: it is evidence.
//
// Functions get a compact counter index on their first nested call (the
// slow path, once per function); each thread slot has one page of counters
// that only its thread writes (no atomic read-modify-write) and the writer
// reads with relaxed loads.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace gpuscope::capture {

// Counter indices 1..kCounterSlots-1; 0 means "none assigned". A function
// beyond them is recorded in full, as before.
inline constexpr size_t kCounterSlots = 256;

// One page per thread slot: the thread's counters, then the writer's record
// of what it has already written (so it emits deltas).
struct CallCounterPage {
  uint64_t counts[kCounterSlots];   // written by the owning thread only
  uint64_t written[kCounterSlots];  // written by the writer only
};
static_assert(sizeof(CallCounterPage) == 4096);

inline void bump_call_counter(CallCounterPage* page, uint16_t index) noexcept {
  std::atomic_ref<uint64_t> c(page->counts[index]);
  c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

// Slow path: a counter index for `function_id` (an interned name) with the
// ApiCall flags its calls carry, or 0 when all are taken.
uint16_t assign_call_counter(uint32_t function_id, uint8_t flags) noexcept;

struct CountedFunction {
  uint32_t function_id;  // 0: not (yet) assigned
  uint8_t flags;
};
// Writer side: the indices handed out so far, and what each one counts.
uint16_t call_counters_assigned() noexcept;
CountedFunction counted_function(uint16_t index) noexcept;

}  // namespace gpuscope::capture
