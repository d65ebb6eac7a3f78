#include "open_captures.h"

#include <type_traits>

namespace gpuscope::registry {

void OpenCaptures::begun(uint64_t stream) noexcept {
  if (holds(stream)) return;
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

bool OpenCaptures::holds(uint64_t stream) const noexcept {
  for (const auto& s : streams_)
    if (s.load(std::memory_order_acquire) == stream) return true;
  return false;
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

// Constant-initialized in .bss, and still there for hooks that run at exit.
static_assert(std::is_trivially_destructible_v<OpenCaptures>);
constinit OpenCaptures detail::g_open_captures;

}  // namespace gpuscope::registry
