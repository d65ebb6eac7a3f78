// The analyzer's model of one traced process, built in a single streaming
// pass over its trace: what the host threads were blocked in (by kind of
// CUDA call), what moved over PCIe, what the allocator did, what the GPU
// reported through NVML, and which call sites did it. Aggregates only:
// memory grows with distinct functions, call sites, threads and live
// allocations, never with the number of events.
//
// Data flows one way: reader -> model (here) -> metrics -> rules -> report.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gpu_breakdown.h"
#include "host_samples.h"
#include "implicit_syncs.h"
#include "interval_set.h"
#include "live_allocations.h"
#include "nvml_clock_events.h"
#include "range_model.h"
#include "trace_reader.h"
#include "trace_summary.h"

namespace gpuscope::analyzer {

// What an outermost CUDA call made the host thread wait for.
enum class CallKind : uint8_t { Sync, Copy, Memset, Alloc, Free, Launch, Init, Other };
inline constexpr size_t kCallKinds = 8;
const char* call_kind_name(CallKind kind);
// From the API function's name (runtime or driver), e.g. cudaMemcpyAsync -> Copy.
CallKind classify_function(const std::string& name);

struct TimeCount {
  uint64_t count = 0;
  uint64_t ns = 0;
  // `calls`: what the record stands for (reader::calls_in: coalesced polls).
  void add(uint64_t duration_ns, uint64_t calls = 1) {
    count += calls;
    ns += duration_ns;
  }
};

struct CopyStats {
  uint64_t count = 0, bytes = 0, ns = 0;
  uint64_t pageable_count = 0, pageable_bytes = 0;
  uint64_t small_count = 0;  // < kSmallCopyBytes: per-request copies
  uint64_t async_count = 0;
  uint64_t prefetch_count = 0, prefetch_bytes = 0;  // managed-memory prefetches (async; bytes asked for)
};
inline constexpr uint64_t kSmallCopyBytes = 64 * 1024;

// One call site: the function and the (deduplicated) stack it was called from.
struct SiteKey {
  uint32_t function_id = 0;
  uint32_t stack_id = 0;
  bool operator==(const SiteKey&) const = default;
};
struct SiteKeyHash {
  size_t operator()(const SiteKey& k) const { return (uint64_t{k.function_id} << 32) ^ k.stack_id; }
};

// One thread's synchronizations that waited on work it had queued: how
// many, what they waited on (kernels, possibly with copies; or only copies
// and memsets), and how much work was queued in all. Kernel launches, copy
// and memset calls queue work: a device-to-device cudaMemcpy returns before
// its bytes move, and a blocking copy leaves nothing for the wait after it.
//
// The waits on kernels are also kept (when each returned and how long it
// blocked) for what the GPU did after each (metrics.cpp, drain_metrics):
// every `kernel_wait_stride`-th of them, the stride doubling whenever
// kMaxKernelWaitsKept are held, so a thread's list stays at 256 KB (a
// trace of many synchronizing threads holds one each) and stays an even
// sample of the run.
inline constexpr size_t kMaxKernelWaitsKept = size_t{1} << 14;
struct KernelWait {
  uint64_t end_ns = 0, wait_ns = 0;
};
struct QueuedWaits {
  uint64_t waits = 0, queued_ops = 0;
  uint64_t on_kernels_ns = 0, on_transfers_ns = 0;
  uint64_t kernel_waits_seen = 0, kernel_wait_stride = 1;
  std::vector<KernelWait> kernel_waits;
  void keep_kernel_wait(const KernelWait& w);
};

struct ThreadActivity {
  uint64_t first_ns = UINT64_MAX, last_ns = 0;
  std::array<uint64_t, kCallKinds> blocked_ns{};  // in outermost CUDA calls
  uint64_t cpu_first_ns = 0, cpu_last_ns = 0;      // cumulative CPU time, first/last sample
  uint64_t cpu_first_at = 0, cpu_last_at = 0;
  uint64_t cuda_calls = 0;
  // From the first kernel launch's start to the last one's end: where a
  // launch-bound verdict must find the GPU idle.
  uint64_t launch_first_ns = UINT64_MAX, launch_last_ns = 0;
};

struct GpuSampleStats {
  uint64_t samples = 0;
  // Sums over samples where the metric was valid, and how many those were.
  uint64_t util_sum = 0, util_n = 0;
  uint64_t sm_sum = 0, sm_n = 0;
  uint64_t dram_sum = 0, dram_n = 0;
  uint64_t pcie_kbps_sum = 0, pcie_n = 0, pcie_kbps_max = 0;
  uint64_t throttle_any = 0;  // OR of throttle reasons seen
  // Samples that had clocks event reasons, and how many of them had each
  // reason of nvml::kClockEventReasons (in its order).
  uint64_t throttle_n = 0;
  std::array<uint32_t, nvml::kClockEventReasonCount> clock_event_samples{};
  uint64_t memory_used_max = 0;
  uint32_t sm_clock_min = UINT32_MAX, sm_clock_max = 0;
  // (time, utilization %) of each sample that had it: one per sampling
  // period (tens of ms), so utilization can be read over part of the run.
  std::vector<std::pair<uint64_t, uint8_t>> util_timeline;
};

struct MemoryCurve {
  int64_t live_bytes = 0, peak_bytes = 0;
  int64_t live_at_quarter = -1;  // after a quarter of the allocations (growth baseline)
  uint64_t allocations = 0;
  uint64_t untracked = 0;  // allocations past kMaxTrackedAllocations: their frees cannot be matched
};

// The host time spent inside the ranges of one name (NVTX message and
// domain), from the host calls the RangeLocator places in them (innermost).
struct RangeStats {
  std::string name, domain;  // domain "" = NVTX default domain
  uint64_t count = 0, total_ns = 0, unterminated = 0;
  uint16_t max_depth = 0;
  bool start_end = false;    // opened with nvtxRangeStart (may cross threads)
  std::array<uint64_t, kCallKinds> blocked_ns{};  // outermost CUDA calls inside, by kind
  uint64_t calls = 0;
};

// The row a range's stats go in: numbered instances of one range
// ("ProfilerStep#12", "batch #3") share "ProfilerStep#*", "batch #*".
std::string range_group_name(const std::string& name);
// Adds `from`'s counts and times into `into` (which takes its names when empty).
void merge_range_stats(RangeStats& into, const RangeStats& from);

struct TraceModel {
  reader::TraceSummary summary;
  uint64_t begin_ns = 0, end_ns = 0;  // the process's span as traced
  // A --range scope: the spans analyzed (sorted, disjoint, within
  // [begin_ns, end_ns)); empty when the whole window is.
  std::vector<std::pair<uint64_t, uint64_t>> scope_spans;
  std::string scope_range;  // the range name that made them
  uint64_t wall_ns() const {
    if (scope_spans.empty()) return end_ns > begin_ns ? end_ns - begin_ns : 0;
    uint64_t total = 0;
    for (const auto& [a, b] : scope_spans) total += b - a;
    return total;
  }
  // Length of a set of intervals inside what is analyzed.
  uint64_t covered(const IntervalSet& s) const {
    return scope_spans.empty() ? s.length_within(begin_ns, end_ns) : s.length_within(scope_spans);
  }

  std::array<TimeCount, kCallKinds> host_by_kind{};        // outermost calls, all threads
  std::map<std::string, TimeCount> host_by_function;       // outermost calls
  std::unordered_map<uint32_t, ThreadActivity> threads;
  uint64_t driver_calls = 0;                                // any depth
  uint64_t nested_calls = 0;                                // depth > 0
  std::array<CopyStats, 7> copies_by_direction{};           // fb::CopyDirection
  uint64_t kernels = 0, memsets = 0;  // launched one by one (Kernel, Memset records)
  // CUDA graphs: launches, and what they ran (from the graphs' nodes).
  uint64_t graph_launches = 0;
  reader::GraphWork graph_work;
  // Outermost calls whose work a stream capture put into a graph: host time
  // spent, nothing run (it runs with the graph's launches).
  std::array<uint64_t, kCallKinds> captured_by_kind{};
  // Back-to-back launches on one stream of different kernels with the same
  // grid and block: elementwise chains that fusion would collapse.
  uint64_t same_shape_chain_links = 0;
  std::map<std::string, uint64_t> chain_pairs;  // "a -> b" -> count
  std::map<std::string, uint64_t> kernels_by_name;
  uint64_t device_records = 0;                              // Source::Device (CUPTI)
  // What the device did, from its own timestamps (CUPTI): unions per kind.
  struct DeviceTimeline {
    IntervalSet kernels, h2d, d2h, other_copies, memsets;
    uint64_t h2d_bytes = 0, d2h_bytes = 0;
    uint64_t h2d_ns = 0, d2h_ns = 0;  // sums of copy durations (bandwidth)
  } device;
  GpuBreakdown gpu_breakdown;  // HTA's temporal and idle-time breakdowns (gpu_breakdown.h)
  std::array<TimeCount, 8> syncs_by_kind{};                 // fb::SyncKind
  TimeCount allocs, frees;
  // Of them, physical memory of the virtual memory API (cuMemCreate,
  // cuMemRelease: PyTorch's expandable segments), which cudaFree never sees.
  uint64_t physical_allocs = 0, physical_frees = 0;
  uint64_t alloc_bytes = 0;
  uint64_t oom_errors = 0;
  // The failing outermost calls that started first and last (not "not
  // ready" answers), and the start of the last work call that succeeded (launch,
  // copy, memset, allocation): whether a process that exited non-zero
  // stopped at its error.
  // cudaErrorNotReady / CUDA_ERROR_NOT_READY: a query's answer, not a failure.
  static constexpr int32_t kNotReadyResult = 600;
  struct Failure {
    uint64_t start_ns = 0;
    uint32_t function_id = 0;
    int32_t result = 0;
  };
  std::optional<Failure> first_failure, last_failure;
  uint64_t last_work_ns = 0;
  MemoryCurve device_memory;
  std::map<uint16_t, GpuSampleStats> gpu;                   // by device
  // The driver's per-process samples (format 1.8): busy time it charged to
  // each pid on each GPU (the larger of SM and memory share x the window),
  // and the names it gave. NVML's GPU-wide figures above include it all.
  std::map<uint16_t, std::map<uint32_t, double>> driver_busy_ns;  // device -> pid -> ns
  std::map<uint32_t, std::string> gpu_process_names;
  uint64_t process_cpu_ns = 0;                              // from process CPU samples
  HostSampleStats host_samples;                             // CPU stack samples (format 1.4)
  struct Site {
    TimeCount calls;
    CallKind kind = CallKind::Other;
    uint64_t failed = 0;  // calls that returned an error (not "not ready")
  };
  std::unordered_map<SiteKey, Site, SiteKeyHash> sites;
  RangeModel ranges;                 // every NVTX range of the trace (not only the window's)
  // Capture windows (gpuscope run --delay/--duration/--capture-range): the
  // only time recorded, sorted and disjoint; empty when the whole run was.
  std::vector<std::pair<uint64_t, uint64_t>> capture_windows;
  // What the capture waited for before opening a window (CaptureArmed);
  // empty when it recorded from the start.
  std::string capture_trigger;
  // Sampled device tracing (format 2.1): the windows in which CUPTI
  // collected, sorted and disjoint, and the schedule's name ("20 ms every
  // 2000 ms"); empty when device activity was traced all the time (or not
  // at all). The analysis is scoped to them (pipeline.cpp).
  std::vector<std::pair<uint64_t, uint64_t>> device_windows;
  std::string device_schedule;
  std::vector<RangeStats> range_stats;  // ranges starting in the window/scope, by total time
  bool ranges_attributed = false;    // host calls were placed in ranges (second pass)
  // The first call that needed a CUDA context (not a device query): its
  // host time is counted as Init, whatever its kind (call_sequence.h).
  std::string context_init_call;
  uint64_t context_init_ns = 0;
  uint64_t context_init_end_ns = 0;  // when that call returned (0: none counted)
  // Synchronizations that followed queued GPU work on their thread, and
  // the host time they waited (call_sequence.h), by thread.
  std::unordered_map<uint32_t, QueuedWaits> waits_on_queued;
  ImplicitSyncs implicit_syncs;      // calls that synchronized without saying so (implicit_syncs.h)
};

// --window START:END, seconds from the process's start; either end open.
struct TimeWindow {
  double start_s = 0;
  double end_s = -1;  // < 0: to the end
};
// Parses "2.5:10", "2.5:" or ":10"; false on anything else.
bool parse_window(const std::string& text, TimeWindow* out);

// Total length of sorted, disjoint spans.
inline uint64_t spans_length(const std::vector<std::pair<uint64_t, uint64_t>>& spans) {
  uint64_t total = 0;
  for (const auto& [a, b] : spans) total += b - a;
  return total;
}

// The part of `spans` inside `windows` (both sorted and disjoint).
std::vector<std::pair<uint64_t, uint64_t>> intersect_spans(const std::vector<std::pair<uint64_t, uint64_t>>& spans,
                                                           const std::vector<std::pair<uint64_t, uint64_t>>& windows);

// The ranges with that message (any domain), by index into model.ranges:
// what --range and --requests select. A name ending in '*' matches every
// message that starts with the rest ("ProfilerStep#*": each PyTorch
// profiler step, numbered in its name).
std::vector<size_t> ranges_named(const TraceModel& model, const std::string& name);
// The prefix a name ending in '*' stands for ("ProfilerStep#"); empty for a
// plain name.
std::string_view range_name_prefix(std::string_view name);
// --range NAME: the spans of every range with that message (any domain),
// merged. Empty when the trace has no such range.
std::vector<std::pair<uint64_t, uint64_t>> range_spans(const TraceModel& model, const std::string& name);

// Reads an opened trace once and builds the model (of the window only:
// records that start outside it are left out and wall time is the window's).
// `known_ranges` (from an earlier pass over the same trace) lets host calls
// be placed in ranges; `scope`, when not empty, keeps only records starting
// inside its spans (sorted, disjoint), and wall time is their length.
// `also`, when set, is handed every chunk of the same pass.
TraceModel build_model(reader::TraceReader& reader, const TimeWindow& window = {},
                       const RangeModel* known_ranges = nullptr,
                       const std::vector<std::pair<uint64_t, uint64_t>>& scope = {},
                       const reader::ChunkVisitor& also = {});

}  // namespace gpuscope::analyzer
