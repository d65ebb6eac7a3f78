// The streams a stream capture was begun on and not yet ended, as the
// capture hooks saw them. Only a gate: while it is empty (the common case, a
// relaxed load) a launch, copy or memset hook knows its work will run; while
// it is not, the hook asks CUDA whether its own stream is capturing (streams
// that joined a capture through an event are found that way too).
//
// Lock-free and fixed-size: beginning and ending captures is rare, but may
// happen on any thread while launches read the gate.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace gpuscope::registry {

class OpenCaptures {
 public:
  static constexpr size_t kCapacity = 64;  // concurrent captures; beyond it the gate stays open for good

  // A capture was begun on `stream` (runtime and driver levels may both say
  // so: the second is a no-op).
  void begun(uint64_t stream) noexcept;
  // The capture on `stream` is over (EndCapture returned, whatever its result,
  // and CUDA says the stream no longer captures).
  void ended(uint64_t stream) noexcept;
  bool any() const noexcept { return open_.load(std::memory_order_relaxed) != 0; }

 private:
  std::atomic<uint32_t> open_{0};  // streams held, plus one for good once the table overflowed
  std::atomic<bool> overflowed_{false};
  std::atomic<uint64_t> streams_[kCapacity] = {};
};

OpenCaptures& open_captures();

}  // namespace gpuscope::registry
