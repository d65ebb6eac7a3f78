// Host calls and device records of one correlation id, brought together
// whatever order the source file holds them in. A host launch, copy or
// memset call waits here for its device record (which carries the kernel
// name and grid, the bytes, direction and memory kinds), or a device record
// for its host call. The table holds at most kMaxPendingJoins entries:
// beyond that the oldest leaves unjoined, so memory is bounded whatever the
// file's size.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <unordered_map>

#include "gpuscope_generated.h"

namespace gpuscope::importer {

enum class WorkKind : uint8_t { Kernel, Copy, Memset };

// What a host call that queued work knows of itself.
struct PendingCall {
  uint64_t start_ns = 0, duration_ns = 0;
  uint32_t tid = 0;
  WorkKind kind = WorkKind::Kernel;
  bool async = false;
};

// What its device record adds.
struct DeviceWork {
  WorkKind kind = WorkKind::Kernel;
  uint64_t stream = 0, bytes = 0;
  int16_t device = -1;
  uint32_t name_id = 0, value = 0;
  uint32_t grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  uint32_t dynamic_shared_bytes = 0;
  fb::CopyDirection direction = fb::CopyDirection::Unknown;
  fb::MemoryKind src_kind = fb::MemoryKind::Unknown, dst_kind = fb::MemoryKind::Unknown;
};

class CorrelationJoin {
 public:
  // Called with every host call once its device side is known (or never
  // will be: `work` empty).
  using Joined = std::function<void(uint64_t correlation, const PendingCall&, const DeviceWork* work)>;
  CorrelationJoin(size_t capacity, Joined joined) : capacity_(capacity), joined_(std::move(joined)) {}

  void add_call(uint64_t correlation, const PendingCall& call);
  void add_work(uint64_t correlation, const DeviceWork& work);
  // Hands out every call still waiting; device records still waiting are
  // counted as having no host call.
  void flush();

  uint64_t calls_without_work() const { return calls_without_work_; }
  uint64_t work_without_call() const { return work_without_call_; }

 private:
  struct Entry {
    std::optional<PendingCall> call;
    std::optional<DeviceWork> work;
  };
  using Pending = std::unordered_map<uint64_t, Entry>;
  void make_room();
  void give_up(Pending::iterator it);

  size_t capacity_;
  Joined joined_;
  Pending pending_;
  std::deque<uint64_t> order_;  // ids in arrival order, for evicting the oldest
  uint64_t calls_without_work_ = 0, work_without_call_ = 0;
};

}  // namespace gpuscope::importer
