// Device memory that is live at each point of a trace, followed from its
// Alloc and Free records. One rule for every reader of that curve: the
// model's memory figures, the Chrome export's counter track and the HTML
// report's series all apply records here, so they cannot disagree.
#pragma once

#include <cstdint>
#include <unordered_map>

#include "gpuscope_generated.h"

namespace gpuscope::analyzer {

// Live allocations followed at most (bounds memory on hostile or leaking
// traces; a real GPU holds far fewer live allocations).
inline constexpr size_t kMaxTrackedAllocations = 1 << 20;

// Device-side memory: device, pool, managed and array allocations. Pinned
// and registered host memory is not on the GPU.
bool is_device_memory(fb::MemoryKind kind);

class LiveAllocations {
 public:
  // Applies one record; true when it changed the live total. An address
  // allocated again without a free replaces its old size.
  bool apply(const fb::Alloc& a);

  int64_t live_bytes() const { return live_bytes_; }
  int64_t peak_bytes() const { return peak_bytes_; }
  uint64_t allocations() const { return allocations_; }  // followed ones
  // Allocations past kMaxTrackedAllocations: their frees cannot be matched.
  uint64_t untracked() const { return untracked_; }

 private:
  std::unordered_map<uint64_t, uint64_t> live_;  // device address -> bytes
  int64_t live_bytes_ = 0, peak_bytes_ = 0;
  uint64_t allocations_ = 0, untracked_ = 0;
};

}  // namespace gpuscope::analyzer
