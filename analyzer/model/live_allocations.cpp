#include "live_allocations.h"

#include <algorithm>

#include "record_flags.h"

namespace gpuscope::analyzer {

bool is_device_memory(fb::MemoryKind kind) {
  return kind == fb::MemoryKind::Device || kind == fb::MemoryKind::Pool || kind == fb::MemoryKind::Managed ||
         kind == fb::MemoryKind::Array;
}

namespace {

// Physical allocations (cuMemCreate) are known by handle, which may equal
// some device address: they are kept apart above every user-space address.
uint64_t key_of(const fb::Alloc& a) {
  constexpr uint64_t kHandle = 1ull << 63;
  return (a.flags() & container::kAllocPhysical) != 0 ? a.address() | kHandle : a.address();
}

}  // namespace

bool LiveAllocations::apply(const fb::Alloc& a) {
  const uint64_t key = key_of(a);
  if (a.op() == fb::AllocOp::Alloc) {
    if (!is_device_memory(a.memory_kind()) || a.address() == 0) return false;
    auto it = live_.find(key);
    if (it == live_.end()) {
      if (live_.size() >= kMaxTrackedAllocations) {
        ++untracked_;
        return false;
      }
      it = live_.emplace(key, 0).first;
    }
    live_bytes_ += static_cast<int64_t>(a.bytes()) - static_cast<int64_t>(it->second);
    it->second = a.bytes();
    peak_bytes_ = std::max(peak_bytes_, live_bytes_);
    ++allocations_;
    return true;
  }
  if (a.op() != fb::AllocOp::Free) return false;
  auto it = live_.find(key);
  if (it == live_.end()) return false;
  live_bytes_ -= static_cast<int64_t>(it->second);
  live_.erase(it);
  return true;
}

}  // namespace gpuscope::analyzer
