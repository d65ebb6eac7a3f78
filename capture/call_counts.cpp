#include "call_counts.h"

namespace gpuscope::capture {
namespace {

// Process-wide, like the interned names they refer to: a new session (a
// new trace file after exec or restart) keeps the indices.
struct Entry {
  std::atomic<uint32_t> function_id{0};
  std::atomic<uint8_t> flags{0};
};
Entry g_entries[kCounterSlots];
std::atomic<uint16_t> g_next{1};

}  // namespace

uint16_t assign_call_counter(uint32_t function_id, uint8_t flags) noexcept {
  uint16_t i = g_next.load(std::memory_order_relaxed);
  do {
    if (i >= kCounterSlots) return 0;
  } while (!g_next.compare_exchange_weak(i, static_cast<uint16_t>(i + 1), std::memory_order_relaxed));
  g_entries[i].flags.store(flags, std::memory_order_relaxed);
  // Release: a writer that sees the id sees the flags.
  g_entries[i].function_id.store(function_id, std::memory_order_release);
  return i;
}

uint16_t call_counters_assigned() noexcept {
  const uint16_t n = g_next.load(std::memory_order_acquire);
  return n < kCounterSlots ? n : static_cast<uint16_t>(kCounterSlots);
}

CountedFunction counted_function(uint16_t index) noexcept {
  if (index == 0 || index >= kCounterSlots) return {0, 0};
  const uint32_t id = g_entries[index].function_id.load(std::memory_order_acquire);
  return {id, g_entries[index].flags.load(std::memory_order_relaxed)};
}

}  // namespace gpuscope::capture
