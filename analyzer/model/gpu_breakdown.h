// The GPU's time split the way Holistic Trace Analysis (HTA 0.5, what
// PyTorch users run on profiler traces) splits it, from device records, so
// that the two tools agree on the same files (docs/import.md, "Compared with
// Holistic Trace Analysis"). Per device:
//
// - temporal breakdown: over the span from the first device operation's
//   start to the last one's end, idle is the time no operation ran, compute
//   the union of compute kernels, non-compute the rest of the union of all
//   operations (copies, memsets, device-side synchronizations, NCCL kernels:
//   time one of them ran and no compute kernel did);
// - idle-time breakdown: on each stream, in start order, the gap from the
//   previous kernel, copy or memset's end to the next one's start is host
//   wait when the next one's launch call started after the previous one
//   ended (the host had not queued it yet), kernel wait when it is shorter
//   than kKernelWaitBelowNs, other otherwise; summed over streams;
// - with two or more profiler steps (ranges named "ProfilerStep#N"), only
//   operations launched before the last step's start count: HTA leaves the
//   last step out as possibly incomplete, and drops device operations whose
//   launch call it cannot find.
//
// Memory does not grow with events: the idle split needs each stream's
// operations in start order, but device records arrive out of order (CUPTI
// fills buffers per context and thread; the trace keeps records by type
// within a chunk), so they pass through a reorder window of
// kReorderWindow operations; one that arrives after a later operation of
// its stream has left the window is counted (late) and kept out of the idle
// split only. Launch times wait for their operations in a table of
// kMaxPendingLaunches entries (direct-mapped by correlation id, which
// increases as calls are made); the oldest are forgotten past that (counted).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "dense_id_map.h"
#include "interval_set.h"
#include "range_model.h"
#include "trace_reader.h"
#include "trace_summary.h"

namespace gpuscope::analyzer {

inline constexpr int64_t kKernelWaitBelowNs = 30'000;  // HTA's consecutive_kernel_delay (30 us)
inline constexpr size_t kMaxPendingLaunches = size_t{1} << 20;
inline constexpr size_t kHostOnlyLaunchSlots = size_t{1} << 16;  // before any device record
inline constexpr size_t kReorderWindow = size_t{1} << 16;
inline constexpr size_t kMaxBreakdownStreams = 4096;

// The bounds above, smaller in tests.
struct GpuBreakdownLimits {
  size_t pending_launches = kMaxPendingLaunches;
  size_t reorder_window = kReorderWindow;
  size_t streams = kMaxBreakdownStreams;
};

// Sums of gaps between consecutive operations on a stream, by cause; HTA
// sums them signed (a gap is negative where operations overlap).
struct IdleSplit {
  int64_t host_wait_ns = 0, kernel_wait_ns = 0, other_ns = 0;
  int64_t total_ns() const { return host_wait_ns + kernel_wait_ns + other_ns; }
  IdleSplit& operator+=(const IdleSplit& o) {
    host_wait_ns += o.host_wait_ns;
    kernel_wait_ns += o.kernel_wait_ns;
    other_ns += o.other_ns;
    return *this;
  }
};

struct DeviceBreakdown {
  int16_t device = -1;  // -1: operations whose device the trace does not say
  uint64_t span_ns = 0, busy_ns = 0, compute_ns = 0;
  IdleSplit idle;  // over the device's streams
  uint64_t operations = 0;
  // Sampled device tracing: the span is only the windows' time (there are
  // no records between them), and the idle split is not made: a stream's
  // gap across two windows is nobody's idle time. 0: not sampled.
  uint32_t sampled_windows = 0;
  uint64_t idle_ns() const { return span_ns - busy_ns; }
  uint64_t non_compute_ns() const { return busy_ns - compute_ns; }
};

struct GpuBreakdown {
  std::vector<DeviceBreakdown> devices;  // by ordinal, only those with operations
  uint64_t last_step_start_ns = 0;       // 0: no profiler step left out
  uint64_t left_out = 0;                 // operations launched in the last step, or whose launch is unknown
  uint64_t late = 0;                     // counted in the temporal breakdown, not in the idle split
  uint64_t launches_forgotten = 0;       // past kMaxPendingLaunches
  uint64_t streams_over_limit = 0;       // operations on streams past kMaxBreakdownStreams, left out
};

// HTA's kernel classification: NCCL kernels ("nccl...Kernel...") and names
// holding "Memcpy" or "Sync" or starting with "Memset" are not compute.
bool is_compute_kernel_name(std::string_view name);

// The start of the last profiler step when the trace has two or more
// ("ProfilerStep" in the range's name, any domain: CPU and GPU annotations
// of a step both count, as in HTA), else 0.
uint64_t last_profiler_step_start(const RangeModel& ranges, const reader::TraceSummary& names);

class GpuBreakdownBuilder {
 public:
  // `last_step_start_ns`: see last_profiler_step_start (0: keep every operation).
  GpuBreakdownBuilder(const reader::TraceSummary& names, uint64_t last_step_start_ns,
                      const GpuBreakdownLimits& limits = {});

  // `keep(start_ns)`: the operation is in the analyzed window. Launch calls
  // are always remembered (a window may start between a launch and its kernel).
  void add(const reader::ChunkView& v, const std::function<bool(uint64_t)>& keep);
  // `device_windows`: sampled device tracing's windows, sorted and disjoint
  // (empty: device records were collected all the time).
  GpuBreakdown finish(const std::vector<std::pair<uint64_t, uint64_t>>& device_windows = {});

 private:
  enum class OpKind : uint8_t { Compute, NonCompute, DeviceSync };
  struct Op {
    uint64_t start = 0, end = 0, correlation = 0, stream = 0;
    int16_t device = -1;
    OpKind kind = OpKind::NonCompute;
  };
  struct StreamState {
    int16_t device = -1;
    bool has_previous = false;
    uint64_t previous_start = 0, previous_end = 0;
  };
  struct DeviceState {
    IntervalSet all, compute;
    IdleSplit idle;
    uint64_t operations = 0;
  };

  void remember_launch(const fb::ApiCall& c);
  bool is_compute(uint32_t name_id);
  void push(const Op& op);
  void place(const Op& op);
  static void split_gap(const Op& op, const StreamState& s, std::optional<uint64_t> launch, IdleSplit& idle);
  std::optional<uint64_t> launch_of(uint64_t correlation) const;

  const reader::TraceSummary& names_;
  uint64_t last_step_start_ns_;
  GpuBreakdownLimits limits_;
  DenseIdMap<bool> compute_by_name_;
  // Launch starts, slot (correlation id & mask): ids are handed out in
  // increasing order, so a slot keeps the newest id of its class and an older
  // id is what a first-in-first-out table of the same size forgets. A hash
  // map with an eviction queue cost a tenth of analyze. calloc: a slot's page
  // is touched only when an id reaches it.
  struct LaunchSlot {
    uint64_t correlation, start_ns;
  };
  struct FreeSlots {
    void operator()(LaunchSlot* p) const { std::free(p); }
  };
  // Until the first device record the table has kHostOnlyLaunchSlots: a
  // trace without device records (host-only capture, simgpu, CUPTI off)
  // never needs the full one, which is 16 MB (docs/performance.md).
  void allocate_launch_slots(size_t slots);
  std::unique_ptr<LaunchSlot[], FreeSlots> launch_slots_;
  uint64_t launch_mask_ = 0;
  bool full_launch_table_ = false;
  std::vector<Op> window_;                               // a min-heap by start
  std::unordered_map<uint64_t, StreamState> streams_;
  std::map<int16_t, DeviceState> devices_;
  GpuBreakdown out_;
};

}  // namespace gpuscope::analyzer
