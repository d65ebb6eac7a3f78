// Numbers computed from the model, each with what it was computed from.
// Rules read only these; the report prints them. Shares are fractions of
// the traced wall time (0..1). A metric that the trace cannot support is
// left unset (std::optional), never guessed.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trace_model.h"

namespace gpuscope::analyzer {

struct CudaError {
  std::string function;
  int code = 0;
  std::string name;  // cudaErrorInsufficientDriver, CUDA_ERROR_NO_DEVICE, ...
  uint64_t count = 0;
};

// Known CUDA runtime/driver error names for the codes the rules care about;
// "" for others. `driver` picks the CUresult spelling.
std::string cuda_error_name(int code, bool driver);
// Codes meaning "no usable GPU here" (missing driver, no device, stub
// library, driver mismatch, ...).
bool is_no_gpu_error(int code);
// What a failing call says about the GPU (docs/rules.md, "What a CUDA error
// says"): none usable here, one this program has no code for, or a working
// CUDA that refused the program's request (a bad argument, a limit, memory,
// a fault in a kernel).
enum class ErrorMeaning { NoGpu, WrongBuild, ProgramError };
ErrorMeaning error_meaning(const std::string& function, int code);
// cudaErrorNotReady / CUDA_ERROR_NOT_READY (600): a query's answer, not a
// failure; so are answers about state (peer access already enabled, host
// memory already registered, the profiler already started, ...).
inline constexpr int kNotReady = 600;
bool is_answer_not_failure(int code);

// The trace's device-activity (CUPTI) status in words: "CUPTI (N records, M
// dropped)", "unavailable (no driver)", "off (reason)"; nothing for traces
// from before format 1.1.
std::optional<std::string> device_collection_text(const reader::TraceSummary& s);

// NVML samples (20 Hz) below which utilization is not a measurement: GPU
// busy is then unknown, or inferred from the host side (docs/rules.md).
inline constexpr uint64_t kMinGpuSamples = 5;
// Other processes' part of a GPU's busy time from which NVML's GPU-wide
// utilization is no longer taken as this process's (the co-tenant bar of
// request tails, kCoTenantShare, is the same 10 %).
inline constexpr double kOtherProcessesShare = 0.10;
inline constexpr uint64_t kMinLaunchSpanSamples = 3;  // NVML samples to judge GPU busy over the launch span
// At most one wait per four queued operations: the work is queued ahead.
inline constexpr double kSparseWaitsPerOp = 0.25;
// A wait's return may precede the end of the device work it waited for by
// this much on the host clock (device timestamps converted) and still have
// drained the queue (drain_metrics).
inline constexpr uint64_t kDrainSkewNs = 20'000;

// One device's time split (gpu_breakdown.h). Idle, compute and non-compute
// are shares of the span from its first operation's start to its last
// one's end; host wait, kernel wait and other are shares of the idle time
// summed over its streams (unset when that sum is not positive).
struct GpuTimeSplit {
  int device = -1;  // -1: operations whose device the trace does not say
  double span_s = 0;
  uint32_t sampled_windows = 0;  // sampled device tracing: span_s is these windows' time
  double idle_share = 0, compute_share = 0, non_compute_share = 0;
  std::optional<double> host_wait_share, kernel_wait_share, other_wait_share;
};

struct RangeIdleCover {
  std::string name, domain;
  uint64_t count = 0;    // instances on the feeding thread
  double idle_s = 0;     // GPU idle time inside them (nested instances counted once)
  double share_of_idle = 0;
  bool covers_run = false;  // repeated, and together nearly the whole analyzed time
};

struct StepBusy {
  uint64_t steps = 0;
  double median = 0, lowest = 0, highest = 0;
  std::string lowest_step, highest_step;
};

// A clocks event reason that held a GPU back (severity Warn or Fail), and in
// how many of that GPU's NVML samples.
struct ClockSlowdown {
  uint32_t device = 0;
  const nvml::ClockEventReason* reason = nullptr;
  uint64_t samples = 0, of_samples = 0;
  uint32_t sm_clock_min = 0, sm_clock_max = 0;  // MHz over the run's samples; 0: not sampled
  // The GPU's enforced and default power limits at the start of capture (W; 0: not recorded).
  uint32_t power_limit_w = 0, power_default_limit_w = 0;
};

struct Metrics {
  double wall_s = 0;
  // The first call that needed a CUDA context absorbed its creation; with
  // the explicit initialization calls, that is initialization time. Judged
  // time is the wall time after it: what the rules have to go on.
  double init_s = 0, judged_s = 0;
  std::string context_init_call;
  // The host thread that spent most time in CUDA calls: it feeds the GPU.
  uint32_t feeder_tid = 0;
  std::array<double, kCallKinds> feeder_share{};  // blocked in each kind of call
  double feeder_outside_cuda_share = 0;
  std::optional<double> feeder_cpu_util;          // its CPU time / its sampled span
  std::optional<double> feeder_cpu_share;         // its CPU time / the whole process's
  std::optional<double> process_cpu_cores;        // process CPU time / wall
  uint32_t host_threads_with_cuda = 0;

  // GPU busy: from device timestamps when the trace has them, else NVML's
  // utilization (mean over samples and devices, with at least
  // kMinGpuSamples), else inferred from the host: the time threads waited
  // in synchronizations that followed queued work, over judged time (a
  // lower bound). gpu_busy_source says which.
  std::optional<double> gpu_util, sm_util, dram_util;
  std::optional<double> nvml_gpu_util;  // whatever the sample count
  // Other processes on this process's GPUs, from the driver's per-process
  // samples (format 1.8), when a sample named this process: their part of
  // the busy time the driver charged there, and the busiest of them
  // ("pid 4417 (batch_embed)"). NVML's utilization counts their work too, so
  // from kOtherProcessesShare on, gpu_util from NVML is scaled to this
  // process's part and the GPU-wide figure kept in nvml_gpu_util_all.
  std::optional<double> other_processes_share;
  std::string busiest_other_process;
  size_t other_processes = 0;  // with busy time in those samples
  std::optional<double> nvml_gpu_util_all;
  std::optional<double> host_inferred_gpu_busy;
  std::string gpu_busy_source = "none";  // device, nvml, host, none
  // GPU busy while the feeding thread was issuing kernel launches (from
  // its first launch to its last), from the same source as gpu_util where
  // it has the resolution (device timestamps, or >= kMinLaunchSpanSamples
  // NVML samples). A loop that blocks in launches because the GPU's queue
  // is full shows a busy GPU here even when the rest of the run idles it.
  std::optional<double> gpu_util_during_launches;
  // The feeding thread's synchronizations that waited on work it had
  // queued (call_sequence.h), and their time as shares of wall time: on
  // kernels, or on copies and memsets only. With few waits per queued
  // operation (kSparseWaitsPerOp) a wait on kernels is the GPU working
  // through its queue, not a stall the synchronization caused.
  uint64_t waits_on_queued = 0, queued_ops = 0;
  double wait_on_kernels_share = 0, wait_on_transfers_share = 0;
  bool sparse_waits = false;
  // Of those waits on kernels, the ones that drained the GPU's queue: the
  // GPU then idled until the host queued more. What that cost, as a share
  // of wall time: per wait, the idle time up to the wait's own length (had
  // the host queued the next work instead of waiting, the GPU's next
  // operation could have started at most that much earlier). Device
  // timestamps only (drain_metrics).
  uint64_t drained_waits = 0;
  double drain_share = 0;
  bool drain_judged = false;  // false without device timestamps: both unknown
  // Device timeline shares of wall time (unions; set with device timestamps).
  std::optional<double> device_kernel_share, device_h2d_share, device_d2h_share, device_other_copy_share,
      device_memset_share;
  // The GPU's time the way Holistic Trace Analysis splits it
  // (gpu_breakdown.h), per device; empty without device timestamps.
  // Host ranges of the feeding thread (NVTX, or an imported trace's
  // annotations, CPU operators and Python functions) by the GPU idle time
  // they cover, most first: what the host was doing while the GPU waited.
  // Profiler steps are left out (they cover everything).
  std::vector<RangeIdleCover> idle_under_ranges;
  double gpu_idle_s = 0;  // with device timestamps: the judged time the GPU did nothing
  // GPU busy in each profiler step (ProfilerStep#N ranges), when there are some.
  std::optional<StepBusy> step_busy;
  std::vector<GpuTimeSplit> gpu_time_breakdown;
  // Device operations left out of it: launched in the last of two or more
  // profiler steps (HTA leaves that step out) or with no launch call found.
  uint64_t gpu_breakdown_left_out = 0;
  bool last_profiler_step_left_out = false;
  std::optional<double> pcie_gbps_mean;
  uint64_t gpu_samples = 0;
  // Reasons that held a GPU's clocks down, by device then catalog order.
  std::vector<ClockSlowdown> clock_slowdowns;
  std::optional<double> fusion_share;  // same-shape chain links per kernel
  std::vector<std::string> top_chains;  // "a -> b (n)"
  uint32_t online_cpus = 0;

  // Host<->device copies.
  uint64_t h2d_bytes = 0, d2h_bytes = 0, h2d_count = 0, d2h_count = 0, d2d_count = 0;
  uint64_t d2d_bytes = 0, peer_count = 0, peer_bytes = 0;
  // The feeding thread's time in copy calls, split by where the bytes went
  // (in proportion to each direction's host time, all threads): over PCIe
  // (host<->device, and copies whose direction the runtime resolved), and
  // within or between GPUs (device-to-device, peer).
  double feeder_pcie_copy_share = 0, feeder_device_copy_share = 0;
  double copy_host_s = 0;                 // host time in copy calls, all threads
  std::optional<double> pageable_share;   // of host<->device bytes
  std::optional<double> small_copy_share; // of host<->device copies, < 64 KiB
  std::optional<double> achieved_gbps;    // host<->device bytes / host time in synchronous copies
  std::optional<double> link_gbps, link_max_gbps;  // current and maximum link of device 0
  std::string link_text, link_max_text;   // "Gen5 x16"
  // "GPU 1: 2 of 18 NVLinks down" for each GPU with links down while others were up, at the start of capture.
  std::vector<std::string> nvlinks_down;

  // Synchronization.
  uint64_t syncs = 0, launches = 0;  // launch calls (kernels and graphs), captured ones included
  uint64_t kernels = 0;               // kernels that ran: launched one by one, or by a graph launch
  uint64_t graph_launches = 0, graph_kernels = 0;
  uint64_t graph_copies = 0;  // memcpy nodes the graph launches ran
  uint64_t captured_calls = 0;        // calls a stream capture turned into graph nodes (nothing ran)
  double sync_host_s = 0;
  std::optional<double> syncs_per_launch;
  std::vector<std::pair<std::string, TimeCount>> sync_calls;  // by function, most time first

  // Memory.
  uint64_t allocs = 0, frees = 0;
  uint64_t physical_allocs = 0, physical_frees = 0;  // of them, cuMemCreate / cuMemRelease
  double alloc_rate_per_s = 0;
  double alloc_free_share = 0;  // feeder's share in malloc + free
  int64_t live_peak_bytes = 0, live_end_bytes = 0;
  std::optional<int64_t> live_growth_bytes;
  uint64_t oom_errors = 0;

  // Environment and fallback evidence.
  std::vector<CudaError> errors;        // outermost calls that returned non-zero
  std::vector<CudaError> failures;      // of those, all but "not ready" answers to queries
  std::vector<CudaError> no_gpu_errors; // of those, "no usable GPU" ones
  std::vector<CudaError> wrong_build_errors;  // of the failures, "no code for this GPU" ones
  std::vector<CudaError> program_errors;      // of the failures, requests a working CUDA refused
  // A sign CUDA worked although nothing succeeded: "cudaGetDeviceCount
  // succeeded", or the error a device raises ("cudaErrorMemoryAllocation
  // comes from a device that exists"); unset without one.
  std::optional<std::string> cuda_answered;
  // The process exited non-zero after GPU work, and its last failing CUDA
  // call came after the last work that succeeded: what it stopped at.
  std::optional<CudaError> stopped_on_error;
  std::optional<CudaError> first_error;  // the failing call that started first: later ones may follow from it
  std::vector<std::string> failed_loads;  // "libcuda.so.1: <dlerror>"
  std::vector<std::string> loaded_gpu_libraries;
  bool cuda_attempted = false;  // a GPU library loaded or a CUDA call made
  uint64_t successful_launches = 0, successful_copies = 0, successful_memsets = 0, successful_allocs = 0;
  bool gpu_work_done = false;  // a launch, copy, memset or allocation succeeded
  std::optional<int> exit_status;  // known when the trace records how the process exited
  std::optional<std::string> visible_devices;  // CUDA_VISIBLE_DEVICES as set
  bool devices_hidden = false;                 // set to an empty or invalid list
  std::vector<std::string> missing_nodes;      // required /dev/nvidia* not usable
  std::optional<std::string> driver_problem;   // the probe's driver load error
  std::string driver_version, runtime_version;

  // Coverage.
  bool device_timestamps = false;  // CUPTI device records present
  // The trace's device-collection status in words ("CUPTI (N records, M
  // dropped)", "unavailable (no driver)", "off (why)"); unset for traces
  // from before format 1.1.
  std::optional<std::string> device_collection;
  bool driver_level_seen = false;
  uint64_t dropped = 0;
  bool truncated = false;
  uint64_t corrupt_frames = 0;
  // Call stacks: why the trace has none, or which calls lack one (format
  // 1.3 records it); empty when there is nothing to say.
  std::string stacks_note;
  std::string python_note;  // Python frames in the stacks: which interpreter, or why none (Python programs only)

  // Implicit synchronization (analyzer/model/implicit_syncs.h): the feeding
  // thread's share of wall time blocked in calls that synchronized without
  // saying so (poll loops excluded: their time is in the explicit figures),
  // the host time of those calls on every thread, and the calls of every cause.
  double implicit_sync_share = 0;
  double implicit_sync_host_s = 0;
  uint64_t implicit_sync_calls = 0;
};

Metrics compute_metrics(const TraceModel& model);
// The implicit-synchronization fields above, once feeder_tid and wall_s are set.
void implicit_sync_metrics(const TraceModel& model, Metrics& x);
// Every span in which the device reported an operation running.
IntervalSet device_busy(const TraceModel& model);
// drained_waits and drain_share, once feeder_tid and wait_on_kernels_share
// are set; busy is device_busy(model) (drain_metrics.cpp).
void drain_metrics(const TraceModel& model, const IntervalSet& busy, Metrics& x);
// The feeding thread's ranges that held the GPU idle, and GPU busy per
// profiler step (range_idle_metrics.cpp); set with device timestamps only.
void range_idle_metrics(const TraceModel& model, Metrics& x);
// The GPUs' links as the trace describes them at the start of capture
// (node_link_metrics.cpp): the PCIe link of device 0, NVLinks down.
void node_link_metrics(const TraceModel& model, Metrics& x);
// The error fields above (errors, failures and their meanings,
// cuda_answered) and the successful work counts, once the launch count is
// set; then, once the exit status is, first_error and stopped_on_error
// (error_metrics.cpp).
void call_outcome_metrics(const TraceModel& model, Metrics& x);
void stopped_on_error_metrics(const TraceModel& model, Metrics& x);
// Other processes' share of this process's GPUs, from the driver's
// per-process samples (other_processes_metrics.cpp); after the NVML figures.
void other_processes_metrics(const TraceModel& model, Metrics& x);

// Theoretical PCIe bandwidth, one direction, GB/s (0 when unknown).
double pcie_gbps(int generation, int width);

}  // namespace gpuscope::analyzer
