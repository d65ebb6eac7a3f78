#include "metrics.h"

#include <algorithm>
#include <array>
#include <cstdlib>

#include <fmt/format.h>

#include "environment.h"
#include "kernel_names.h"

namespace gpuscope::analyzer {
namespace {


bool is_gpu_library(const std::string& path) {
  const std::string base = path.substr(path.rfind('/') + 1);
  for (const char* p : {"libcuda.", "libcudart", "libcublas", "libcudnn", "libnvrtc", "libnvidia-ml", "libnccl",
                        "libcufft", "libcusparse", "libcusolver", "libcurand", "libnvJitLink", "libcupti"})
    if (base.starts_with(p)) return true;
  return false;
}

bool is_loaded_by_gpuscope(const std::string& path) {
  const std::string base = path.substr(path.rfind('/') + 1);
  return base.starts_with("libcuda.") || base.starts_with("libnvidia-ml") || base.starts_with("libcupti");
}

void host_metrics(const TraceModel& m, Metrics& x) {
  const double wall = std::max<double>(1, static_cast<double>(m.wall_ns()));
  uint64_t best = 0;
  for (const auto& [tid, t] : m.threads) {
    if (t.cuda_calls == 0) continue;
    ++x.host_threads_with_cuda;
    uint64_t blocked = 0;
    for (uint64_t b : t.blocked_ns) blocked += b;
    if (blocked >= best) {
      best = blocked;
      x.feeder_tid = tid;
    }
  }
  double inside = 0;
  if (auto it = m.threads.find(x.feeder_tid); it != m.threads.end()) {
    const ThreadActivity& t = it->second;
    for (size_t k = 0; k < kCallKinds; ++k) {
      x.feeder_share[k] = std::min(1.0, static_cast<double>(t.blocked_ns[k]) / wall);
      inside += x.feeder_share[k];
    }
    if (t.cpu_last_at > t.cpu_first_at + 50'000'000)
      x.feeder_cpu_util = static_cast<double>(t.cpu_last_ns - t.cpu_first_ns) / (t.cpu_last_at - t.cpu_first_at);
    // Both cumulative: a thread doing all of the process's work has ~1.
    if (m.process_cpu_ns > 0 && t.cpu_last_at > 0)
      x.feeder_cpu_share = std::min(1.0, static_cast<double>(t.cpu_last_ns) / m.process_cpu_ns);
  }
  x.feeder_outside_cuda_share = std::max(0.0, 1.0 - inside);
  if (m.summary.process) x.online_cpus = m.summary.process->online_cpus;
  if (m.process_cpu_ns != 0) x.process_cpu_cores = static_cast<double>(m.process_cpu_ns) / wall;
}

void gpu_metrics(const TraceModel& m, Metrics& x) {
  uint64_t util = 0, util_n = 0, sm = 0, sm_n = 0, dram = 0, dram_n = 0, pcie = 0, pcie_n = 0;
  for (const auto& [dev, g] : m.gpu) {
    x.gpu_samples += g.samples;
    util += g.util_sum, util_n += g.util_n, sm += g.sm_sum, sm_n += g.sm_n;
    dram += g.dram_sum, dram_n += g.dram_n, pcie += g.pcie_kbps_sum, pcie_n += g.pcie_n;
    // Power cap, hardware slowdown, thermal and power-brake slowdowns; not
    // "GPU idle", applications clocks or sync boost (Info).
    for (size_t i = 0; i < nvml::kClockEventReasonCount; ++i) {
      const nvml::ClockEventReason& r = nvml::kClockEventReasons[i];
      if (r.severity == nvml::ClockEventSeverity::Info || g.clock_event_samples[i] == 0) continue;
      const bool clocks = g.sm_clock_max != 0;
      ClockSlowdown slow{static_cast<uint32_t>(dev), &r, g.clock_event_samples[i], g.throttle_n,
                         clocks ? g.sm_clock_min : 0, clocks ? g.sm_clock_max : 0};
      for (const container::DeviceDescription& d : m.summary.devices)
        if (d.index == static_cast<uint32_t>(dev)) {
          slow.power_limit_w = d.power_limit_mw / 1000;
          slow.power_default_limit_w = d.power_default_limit_mw / 1000;
        }
      x.clock_slowdowns.push_back(slow);
    }
  }
  if (util_n) x.nvml_gpu_util = static_cast<double>(util) / util_n / 100.0;
  if (util_n && x.gpu_samples >= kMinGpuSamples) {
    x.gpu_util = x.nvml_gpu_util;
    x.gpu_busy_source = "nvml";
  }
  if (sm_n) x.sm_util = static_cast<double>(sm) / sm_n / 100.0;
  if (dram_n) x.dram_util = static_cast<double>(dram) / dram_n / 100.0;
  if (pcie_n) x.pcie_gbps_mean = static_cast<double>(pcie) / pcie_n * 1000.0 / 1e9;
}

}  // namespace

IntervalSet device_busy(const TraceModel& m) {
  const auto& d = m.device;
  IntervalSet any;
  for (const IntervalSet* s : {&d.kernels, &d.h2d, &d.d2h, &d.other_copies, &d.memsets}) any.add_all(*s);
  return any;
}

namespace {

// With device timestamps, GPU busy and copy bandwidth come from what the
// device itself reported, not from sampled utilization or host call times.
void device_metrics(const TraceModel& m, const IntervalSet& busy, Metrics& x) {
  if (m.device_records == 0) return;
  const auto& d = m.device;
  const double wall = std::max<double>(1, static_cast<double>(m.wall_ns()));
  const auto share = [&](const IntervalSet& s) { return m.covered(s) / wall; };
  x.device_kernel_share = share(d.kernels);
  x.device_h2d_share = share(d.h2d);
  x.device_d2h_share = share(d.d2h);
  x.device_other_copy_share = share(d.other_copies);
  x.device_memset_share = share(d.memsets);
  x.gpu_util = share(busy);
  x.gpu_busy_source = "device";
  if (d.h2d_ns + d.d2h_ns > 0) x.achieved_gbps = static_cast<double>(d.h2d_bytes + d.d2h_bytes) / (d.h2d_ns + d.d2h_ns);
}

void gpu_time_breakdown_metrics(const TraceModel& m, Metrics& x) {
  if (m.device_records == 0) return;
  const GpuBreakdown& b = m.gpu_breakdown;
  for (const DeviceBreakdown& d : b.devices) {
    GpuTimeSplit t;
    t.device = d.device;
    t.span_s = d.span_ns / 1e9;
    t.sampled_windows = d.sampled_windows;
    const double span = std::max<double>(1, static_cast<double>(d.span_ns));
    t.idle_share = d.idle_ns() / span;
    t.compute_share = d.compute_ns / span;
    t.non_compute_share = d.non_compute_ns() / span;
    if (const double idle = static_cast<double>(d.idle.total_ns()); idle > 0) {
      t.host_wait_share = d.idle.host_wait_ns / idle;
      t.kernel_wait_share = d.idle.kernel_wait_ns / idle;
      t.other_wait_share = d.idle.other_ns / idle;
    }
    x.gpu_time_breakdown.push_back(t);
  }
  x.gpu_breakdown_left_out = b.left_out;
  x.last_profiler_step_left_out = b.last_step_start_ns != 0;
}

// Without a measurement of GPU busy, a synchronization that followed queued
// launches and blocked for T says the GPU had up to T of work queued: one
// wait at the end of queued work is a busy GPU, not a sync-bound program.
void host_inferred_metrics(const TraceModel& m, Metrics& x) {
  const double wall = std::max<double>(1, static_cast<double>(m.wall_ns()));
  uint64_t busiest = 0;
  for (const auto& [tid, q] : m.waits_on_queued) {
    busiest = std::max(busiest, q.on_kernels_ns + q.on_transfers_ns);
    if (tid != x.feeder_tid) continue;
    x.waits_on_queued = q.waits;
    x.queued_ops = q.queued_ops;
    x.wait_on_kernels_share = std::min(1.0, q.on_kernels_ns / wall);
    x.wait_on_transfers_share = std::min(1.0, q.on_transfers_ns / wall);
    x.sparse_waits = q.queued_ops > 0 && static_cast<double>(q.waits) / q.queued_ops <= kSparseWaitsPerOp;
  }
  if (busiest == 0 || x.judged_s <= 0) return;
  x.host_inferred_gpu_busy = std::min(1.0, busiest / 1e9 / x.judged_s);
  if (x.gpu_util) return;
  x.gpu_util = x.host_inferred_gpu_busy;
  x.gpu_busy_source = "host";
}

// NVML's utilization covers the sampling period before each sample, so a
// span's samples run from just after it starts to one period after it ends.
std::optional<double> nvml_util_within(const TraceModel& m, uint64_t from, uint64_t to) {
  uint64_t sum = 0, n = 0;
  for (const auto& [dev, g] : m.gpu) {
    const auto& tl = g.util_timeline;
    const uint64_t period = tl.size() >= 2 ? (tl.back().first - tl.front().first) / (tl.size() - 1) : 0;
    for (const auto& [at, pct] : tl)
      if (at > from && at <= to + period) sum += pct, ++n;
  }
  if (n < kMinLaunchSpanSamples) return std::nullopt;
  return static_cast<double>(sum) / n / 100.0;
}

void launch_span_metrics(const TraceModel& m, const IntervalSet& busy, Metrics& x) {
  const auto it = m.threads.find(x.feeder_tid);
  if (it == m.threads.end() || it->second.launch_last_ns <= it->second.launch_first_ns) return;
  const uint64_t from = it->second.launch_first_ns, to = it->second.launch_last_ns;
  if (x.gpu_busy_source == "device") {
    x.gpu_util_during_launches = static_cast<double>(busy.length_within(from, to)) / (to - from);
  } else if (x.gpu_busy_source == "nvml") {
    x.gpu_util_during_launches = nvml_util_within(m, from, to);
  }
}

// Copy kinds go where they belong: host<->device bytes cross PCIe, device
// and peer copies do not. Unknown and Default directions count as PCIe (the
// runtime decides; most such copies in practice involve host memory).
void split_copy_time(const TraceModel& m, Metrics& x) {
  uint64_t pcie_ns = 0, device_ns = 0, all_ns = 0, pcie_bytes = 0, device_bytes = 0;
  for (size_t d = 0; d < m.copies_by_direction.size(); ++d) {
    const CopyStats& c = m.copies_by_direction[d];
    all_ns += c.ns;
    switch (static_cast<fb::CopyDirection>(d)) {
      case fb::CopyDirection::DeviceToDevice:
      case fb::CopyDirection::PeerToPeer: device_ns += c.ns, device_bytes += c.bytes; break;
      case fb::CopyDirection::HostToHost: break;
      default: pcie_ns += c.ns, pcie_bytes += c.bytes;
    }
  }
  const double copy_share = x.feeder_share[static_cast<size_t>(CallKind::Copy)];
  if (all_ns == 0) {
    x.feeder_pcie_copy_share = copy_share;  // copy calls without copy records: as before, PCIe
  } else {
    x.feeder_pcie_copy_share = copy_share * pcie_ns / all_ns;
    x.feeder_device_copy_share = copy_share * device_ns / all_ns;
  }
  // Waits on queued copies are the copies' time, split by the bytes each
  // kind moved (the wait does not say which copy it waited for).
  if (pcie_bytes + device_bytes == 0) return;
  const double device_part = static_cast<double>(device_bytes) / (pcie_bytes + device_bytes);
  x.feeder_device_copy_share += x.wait_on_transfers_share * device_part;
  x.feeder_pcie_copy_share += x.wait_on_transfers_share * (1 - device_part);
}

void copy_metrics(const TraceModel& m, Metrics& x) {
  const CopyStats& h2d = m.copies_by_direction[static_cast<size_t>(fb::CopyDirection::HostToDevice)];
  const CopyStats& d2h = m.copies_by_direction[static_cast<size_t>(fb::CopyDirection::DeviceToHost)];
  x.h2d_bytes = h2d.bytes, x.d2h_bytes = d2h.bytes, x.h2d_count = h2d.count, x.d2h_count = d2h.count;
  const CopyStats& d2d = m.copies_by_direction[static_cast<size_t>(fb::CopyDirection::DeviceToDevice)];
  const CopyStats& peer = m.copies_by_direction[static_cast<size_t>(fb::CopyDirection::PeerToPeer)];
  x.d2d_count = d2d.count, x.d2d_bytes = d2d.bytes, x.peer_count = peer.count, x.peer_bytes = peer.bytes;
  split_copy_time(m, x);
  x.copy_host_s = m.host_by_kind[static_cast<size_t>(CallKind::Copy)].ns / 1e9;
  const uint64_t bytes = h2d.bytes + d2h.bytes, count = h2d.count + d2h.count;
  if (bytes) x.pageable_share = static_cast<double>(h2d.pageable_bytes + d2h.pageable_bytes) / bytes;
  if (count) x.small_copy_share = static_cast<double>(h2d.small_count + d2h.small_count) / count;
  // Synchronous copies only: an async call returns before its bytes move.
  const uint64_t sync_count = count - h2d.async_count - d2h.async_count;
  const uint64_t sync_ns = h2d.ns + d2h.ns;
  if (!x.achieved_gbps && sync_count * 2 > count && sync_ns > 0) x.achieved_gbps = static_cast<double>(bytes) / sync_ns;
}

void sync_and_memory_metrics(const TraceModel& m, Metrics& x) {
  for (const auto& tc : m.syncs_by_kind) x.syncs += tc.count;
  x.sync_host_s = m.host_by_kind[static_cast<size_t>(CallKind::Sync)].ns / 1e9;
  x.launches = m.host_by_kind[static_cast<size_t>(CallKind::Launch)].count;
  x.graph_launches = m.graph_launches;
  x.graph_kernels = m.graph_work.kernels;
  x.graph_copies = m.graph_work.copies;
  x.kernels = m.kernels + m.graph_work.kernels;
  for (uint64_t n : m.captured_by_kind) x.captured_calls += n;
  if (m.kernels) x.fusion_share = static_cast<double>(m.same_shape_chain_links) / m.kernels;
  std::vector<std::pair<uint64_t, std::string>> chains;
  for (const auto& [pair, n] : m.chain_pairs) {
    const size_t arrow = pair.find(" -> ");
    chains.emplace_back(n, arrow == std::string::npos
                               ? short_kernel_name(pair)
                               : short_kernel_name(pair.substr(0, arrow)) + " -> " +
                                     short_kernel_name(pair.substr(arrow + 4)));
  }
  std::sort(chains.rbegin(), chains.rend());
  for (size_t i = 0; i < std::min<size_t>(3, chains.size()); ++i)
    x.top_chains.push_back(fmt::format("{} ({}x)", chains[i].second, chains[i].first));
  if (x.launches) x.syncs_per_launch = static_cast<double>(x.syncs) / x.launches;
  for (const auto& [name, tc] : m.host_by_function)
    if (classify_function(name) == CallKind::Sync) x.sync_calls.emplace_back(name, tc);
  std::sort(x.sync_calls.begin(), x.sync_calls.end(), [](auto& a, auto& b) { return a.second.ns > b.second.ns; });
  x.allocs = m.allocs.count, x.frees = m.frees.count;
  x.physical_allocs = m.physical_allocs, x.physical_frees = m.physical_frees;
  x.alloc_rate_per_s = x.wall_s > 0 ? (x.allocs + x.frees) / x.wall_s : 0;
  x.alloc_free_share = x.feeder_share[static_cast<size_t>(CallKind::Alloc)] +
                       x.feeder_share[static_cast<size_t>(CallKind::Free)];
  x.live_peak_bytes = m.device_memory.peak_bytes;
  x.live_end_bytes = m.device_memory.live_bytes;
  if (m.device_memory.live_at_quarter >= 0)
    x.live_growth_bytes = m.device_memory.live_bytes - m.device_memory.live_at_quarter;
  x.oom_errors = m.oom_errors;
}

// How the process ended: a known exit status, or nothing when the trace
// has no end record or the process was detached or replaced by exec.
void end_metrics(const TraceModel& m, Metrics& x) {
  if (!m.summary.end) return;
  switch (m.summary.end->kind) {
    case fb::EndKind::ReturnFromMain:
    case fb::EndKind::Exit:
    case fb::EndKind::ImmediateExit:
    case fb::EndKind::LastThreadExit: x.exit_status = m.summary.end->exit_status; break;
    default: break;
  }
}

void library_metrics(const TraceModel& m, Metrics& x) {
  const reader::TraceSummary& s = m.summary;
  for (const auto& l : s.loads) {
    if (l.unload || !is_gpu_library(l.path)) continue;
    if (l.ok)
      x.loaded_gpu_libraries.push_back(l.resolved_path.empty() ? l.path : l.resolved_path);
    else
      x.failed_loads.push_back(l.path + ": " + l.error);
  }
  // Libraries the program linked (not dlopen'ed) appear only in the module map.
  // gpuscope itself maps libcuda.so.1 (the environment probe), NVML and
  // CUPTI into every traced process, so those prove nothing there: a
  // launcher's shell would read as a CUDA program that fell back to the CPU.
  for (const auto& mod : s.modules)
    if (is_gpu_library(mod.path) && !is_loaded_by_gpuscope(mod.path) &&
        std::find(x.loaded_gpu_libraries.begin(), x.loaded_gpu_libraries.end(), mod.path) == x.loaded_gpu_libraries.end())
      x.loaded_gpu_libraries.push_back(mod.path);
  x.cuda_attempted = !x.loaded_gpu_libraries.empty() || !x.failed_loads.empty() || !m.host_by_function.empty() ||
                     m.device_records > 0;
}

void environment_metrics(const TraceModel& m, Metrics& x) {
  const reader::TraceSummary& s = m.summary;
  if (s.process)
    for (const auto& [k, v] : s.process->environment)
      if (k == "CUDA_VISIBLE_DEVICES") {
        x.visible_devices = v;
        // Empty, "-1", "NoDevFiles" or any list starting with an invalid index hides every GPU.
        x.devices_hidden = v.empty() || v == "-1" || v == "NoDevFiles" || v.front() == '-';
      }
  if (s.probe) {
    for (const auto& n : s.probe->device_nodes) {
      const std::string name = n.path.substr(n.path.rfind('/') + 1);
      const bool required = name == "nvidiactl" || name == "nvidia-uvm" || name == "nvidia0";
      if (required && (!n.exists || !n.readable || !n.writable))
        x.missing_nodes.push_back(n.path + (n.exists ? " (no access)" : " (missing)"));
    }
    if (!s.probe->driver_loaded || s.probe->driver_version < 0)
      x.driver_problem = s.probe->driver_error.empty() ? "libcuda.so.1 did not load" : s.probe->driver_error;
    if (s.probe->driver_version > 0)
      x.driver_version = fmt::format("CUDA {}.{}", s.probe->driver_version / 1000, s.probe->driver_version % 1000 / 10);
    if (!s.probe->nvml_driver_version.empty()) x.driver_version += " (driver " + s.probe->nvml_driver_version + ")";
  }
}

// Why a trace has no call stacks, or which calls lack one; "" when every
// call that records a call site has its stack.
std::string stack_capture_note(const reader::TraceSummary& s) {
  uint64_t calls = 0;
  for (const auto& [name, n] : s.calls_by_function) calls += n;
  if (!s.stack_capture) {  // a trace from before format 1.3
    if (!s.stacks.empty()) return "";
    for (const auto& [key, value] : s.process ? s.process->environment : decltype(s.process->environment){})
      if (key == protocol::env::kStacks && value == "0")
        return fmt::format("off ({}=0): findings have no call sites", protocol::env::kStacks);
    return "none in this trace, which does not record whether they were on (format 1.3 does)";
  }
  const container::StackCaptureData& c = *s.stack_capture;
  switch (static_cast<fb::StackCaptureState>(c.state)) {
    case fb::StackCaptureState::Off:
      return fmt::format("off (--no-stacks or {}=0): findings have no call sites", protocol::env::kStacks);
    case fb::StackCaptureState::Unavailable: return "unavailable: " + c.reason;
    case fb::StackCaptureState::Active: break;
    default: return fmt::format("unknown capture state {}", c.state);
  }
  std::string gaps;
  if (c.unwind_failures != 0) gaps = fmt::format("{} calls could not be unwound", c.unwind_failures);
  if (c.table_full != 0)
    gaps += fmt::format("{}{} calls came after the stack table filled", gaps.empty() ? "" : ", ", c.table_full);
  if (!s.stacks.empty()) return gaps.empty() ? "" : "some calls have none: " + gaps;
  if (!gaps.empty()) return "on, none recorded: " + gaps;
  if (calls == 0) return "on, none recorded: the program made no hooked CUDA call";
  return fmt::format("on, none recorded: none of the {} hooked calls is one that records its call site", calls);
}

// Python frames (format 1.6): said for a Python program only.
std::string python_stacks_note(const reader::TraceSummary& s) {
  if (!s.python_stacks) return "";
  const container::PythonStacksData& p = *s.python_stacks;
  const std::string version = fmt::format("CPython {}.{}.{}", p.version >> 24, p.version >> 16 & 0xFF, p.version >> 8 & 0xFF);
  switch (static_cast<fb::PythonStacksState>(p.state)) {
    case fb::PythonStacksState::NotPython: return "";
    case fb::PythonStacksState::Unsupported: return "no Python frames (" + p.reason + "): native frames only";
    case fb::PythonStacksState::Active: break;
    default: return fmt::format("unknown Python stack state {}", p.state);
  }
  std::string out = "Python frames from " + version;
  if (p.chains_cut != 0) out += fmt::format(", {} chains cut at {} frames (outer frames left out)", p.chains_cut, 64);
  if (p.codes_dropped != 0) out += fmt::format(", {} code objects not copied (table full: shown as <python code>)", p.codes_dropped);
  return out;
}

void coverage_metrics(const TraceModel& m, Metrics& x) {
  const reader::TraceSummary& s = m.summary;
  x.device_collection = device_collection_text(s);
  x.device_timestamps = m.device_records > 0;
  x.driver_level_seen = m.driver_calls > 0;
  x.dropped = s.dropped_total();
  x.corrupt_frames = s.stats.frames_corrupt;
  for (const auto& p : s.problems)
    if (p.kind == reader::ProblemKind::Truncated || p.kind == reader::ProblemKind::NoTotals) x.truncated = true;
  x.stacks_note = stack_capture_note(s);
  x.python_note = python_stacks_note(s);
}

}  // namespace

std::optional<std::string> device_collection_text(const reader::TraceSummary& s) {
  if (!s.device_collection) return std::nullopt;
  const container::DeviceCollectionData& d = *s.device_collection;
  switch (static_cast<fb::DeviceCollectionState>(d.state)) {
    case fb::DeviceCollectionState::Active: {
      if (s.import_source)
        return fmt::format("device records from the imported file ({} records, {} with no host call found)",
                           d.records, d.uncorrelated);
      std::string text = fmt::format("CUPTI ({} records, {} dropped", d.records, d.dropped);
      if (d.buffers_refused != 0) text += fmt::format(", {} buffers refused at the cap", d.buffers_refused);
      return text + ")";
    }
    case fb::DeviceCollectionState::NotInjected:
    case fb::DeviceCollectionState::LibraryMissing: return "unavailable (" + d.reason + ")";
    default: return "off (" + d.reason + ")";
  }
}

Metrics compute_metrics(const TraceModel& m) {
  Metrics x;
  x.wall_s = m.wall_ns() / 1e9;
  x.init_s = std::min(x.wall_s, m.host_by_kind[static_cast<size_t>(CallKind::Init)].ns / 1e9);
  x.judged_s = x.wall_s - x.init_s;
  x.context_init_call = m.context_init_call;
  host_metrics(m, x);
  gpu_metrics(m, x);
  other_processes_metrics(m, x);
  // Built once: three metrics read it, and it is as large as the device records.
  const IntervalSet busy = m.device_records ? device_busy(m) : IntervalSet{};
  device_metrics(m, busy, x);
  gpu_time_breakdown_metrics(m, x);
  host_inferred_metrics(m, x);
  drain_metrics(m, busy, x);
  launch_span_metrics(m, busy, x);
  copy_metrics(m, x);
  node_link_metrics(m, x);
  sync_and_memory_metrics(m, x);
  call_outcome_metrics(m, x);
  end_metrics(m, x);
  stopped_on_error_metrics(m, x);
  library_metrics(m, x);
  environment_metrics(m, x);
  coverage_metrics(m, x);
  implicit_sync_metrics(m, x);
  range_idle_metrics(m, x);
  return x;
}

}  // namespace gpuscope::analyzer
