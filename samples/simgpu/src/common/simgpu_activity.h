// simgpu's device activity interface: what its simulated libcupti.so.13
// (src/cupti/) gets from its libcuda.so.1. Like the real CUPTI, which
// reaches the driver through private tables, it asks cuGetExportTable for
// kSimgpuActivityTableId; no extra symbol is exported, so libcuda.so.1
// keeps exactly the real driver's exports.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>

namespace simgpu {

// CUPTI's "not applicable" for a 32-bit id (the stream of a context's or an
// event's wait, the event of a stream's).
inline constexpr uint32_t kNotApplicable = 0xFFFFFFFFu;

// One operation the device model scheduled, an allocation or free it made,
// or a host wait it ended (start and end of the wait).
struct DeviceRecord {
  enum Kind : uint32_t { None = 0, Kernel = 1, Copy = 2, Memset = 3, Alloc = 4, Free = 5, Sync = 6 };
  uint32_t kind = None;
  uint32_t device = 0;
  uint32_t correlation = 0;  // from `enter` in the API call that queued it
  uint64_t stream_id = 0;
  int64_t start_ns = 0, end_ns = 0;  // CLOCK_MONOTONIC; the end may be in the future
  uint64_t bytes = 0;
  // Copies: CUpti_ActivityMemcpyKind and CUpti_ActivityMemoryKind values;
  // memsets, allocations and frees: dst_kind is the memory's kind.
  uint8_t copy_kind = 0, src_kind = 0, dst_kind = 0;
  uint8_t sync_type = 0;  // Sync: a CUpti_ActivitySynchronizationType value
  uint32_t event_id = 0;  // Sync on or for an event: the event's id
  uint64_t address = 0;   // Alloc, Free
  bool async = false;
  uint32_t grid[3] = {}, block[3] = {};
  const char* name = nullptr;  // kernels; valid during the call only
};

// `enter` is called inside every API call that queues device work, on the
// calling thread, and returns the call's correlation id (CUPTI's API-entry
// callback fires there). `record` is called when the model schedules each
// operation, under the model's lock: it must only copy the record.
using ActivityEnterFn = uint32_t (*)();
using ActivityRecordFn = void (*)(const DeviceRecord&);

struct ActivityTable {
  size_t size;
  void (*set_sink)(ActivityEnterFn enter, ActivityRecordFn record);
};

inline constexpr CUuuid kSimgpuActivityTableId = {
    {'s', 'i', 'm', 'g', 'p', 'u', '-', 'a', 'c', 't', 'i', 'v', 'i', 't', 'y', '1'}};

}  // namespace simgpu
