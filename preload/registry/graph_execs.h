// What each executable CUDA graph runs per launch, so that a cudaGraphLaunch
// / cuGraphLaunch record says how many kernels, copies and memsets it ran
// (trace format 1.3, GraphLaunch). Filled when a graph is instantiated or an
// exec updated (hooks/graph_calls.h counts the graph's nodes then), read on
// every graph launch.
//
// Readers are launch hooks: lock-free (a sequence lock, as in
// memory_registry.h), no allocation, no CUDA query. Writers are instantiate,
// update, destroy and node-enable hooks, serialized by a mutex: they follow
// calls that take microseconds to milliseconds anyway.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "sequence_lock.h"

namespace gpuscope::registry {

// A graph's nodes by what they do; child graphs are counted into their
// parent, conditional nodes count as `other` (their bodies are not counted:
// they run a number of times only the device knows).
struct GraphWork {
  uint32_t kernels = 0, copies = 0, memsets = 0, other = 0;
  bool conditional = false;
  bool known = false;  // false: the exec was never seen instantiated (or the table was full)

  GraphWork& operator+=(const GraphWork& o) noexcept;
};

// CUDA's node type numbering, the same in the runtime (cudaGraphNodeType)
// and the driver (CUgraphNodeType); the hook files static_assert it.
enum class GraphNodeType : int { Kernel = 0, Memcpy = 1, Memset = 2, ChildGraph = 4, Conditional = 13 };

// Adds one node of CUDA type `type` (not a child graph: the caller recurses).
void count_node(GraphWork* work, int type) noexcept;

class GraphExecs {
 public:
  static constexpr size_t kCapacity = 1 << 12;  // live executable graphs; beyond it, launches say "unknown"

  // Writers.
  void set(uint64_t exec, const GraphWork& work);
  // One node of `type` enabled (+1) or disabled (-1) in `exec`.
  void adjust(uint64_t exec, int type, int delta);
  void erase(uint64_t exec);

  // Reader: what `exec` runs; known == false when it is not in the table.
  GraphWork find(uint64_t exec) const noexcept;

  uint64_t overflows() const noexcept { return overflows_.load(std::memory_order_relaxed); }

 private:
  static constexpr uint64_t kEmpty = 0, kErased = 1;  // keys no exec handle (a pointer) can be
  struct Slot {
    std::atomic<uint64_t> key{kEmpty};
    std::atomic<uint64_t> nodes{0};  // kernels | copies << 32
    std::atomic<uint64_t> more{0};   // memsets | other << 32 (bit 31 of other: conditional)
  };
  static size_t home(uint64_t exec) noexcept;
  // The slot holding `exec`, or kCapacity (readers: inside a sequence read).
  size_t locate(uint64_t exec) const noexcept;
  void store(Slot& slot, const GraphWork& work) noexcept;
  static GraphWork load(const Slot& slot) noexcept;

  std::mutex writer_;
  SequenceLock sequence_;
  std::atomic<uint64_t> overflows_{0};
  Slot slots_[kCapacity];
};

// The process-wide table the hooks share.
GraphExecs& graph_execs();

}  // namespace gpuscope::registry
