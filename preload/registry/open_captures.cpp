#include "open_captures.h"

#include <type_traits>

namespace gpuscope::registry {

void OpenCaptures::begun(uint64_t stream) noexcept {
  for (auto& s : streams_)
    if (s.load(std::memory_order_acquire) == stream) return;
  for (auto& s : streams_) {
    uint64_t expected = 0;
    if (s.compare_exchange_strong(expected, stream, std::memory_order_acq_rel)) {
      open_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    if (expected == stream) return;  // another level of the same call got there first
  }
  if (!overflowed_.exchange(true, std::memory_order_relaxed)) open_.fetch_add(1, std::memory_order_relaxed);
}

// Every copy: two threads beginning on the same stream at once may both
// have found a free slot.
void OpenCaptures::ended(uint64_t stream) noexcept {
  for (auto& s : streams_) {
    uint64_t expected = stream;
    if (s.compare_exchange_strong(expected, 0, std::memory_order_acq_rel))
      open_.fetch_sub(1, std::memory_order_relaxed);
  }
}

static_assert(std::is_trivially_destructible_v<OpenCaptures>);
OpenCaptures& open_captures() {
  static constinit OpenCaptures captures;
  return captures;
}

}  // namespace gpuscope::registry
