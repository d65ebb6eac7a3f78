#include "rules.h"
#include "rules_internal.h"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

namespace gpuscope::analyzer {
namespace {

std::optional<Finding> pcie_finding(const TraceModel& m, const Metrics& x) {
  const double share = x.feeder_pcie_copy_share;
  Status st = share_status(share, kFailShare, kWarnShare);
  if (st == Status::Pass) return std::nullopt;
  Finding f{"pcie.host_blocked_in_copies", Bottleneck::PcieBound, st, share,
            fmt::format("host<->device copies hold the feeding thread {} of the time", pct(share)), {}, {}, {}};
  f.evidence.push_back(fmt::format("{} host-to-device copies ({}), {} device-to-host ({}), {:.3f} s in copy calls",
                                   x.h2d_count, mib(x.h2d_bytes), x.d2h_count, mib(x.d2h_bytes), x.copy_host_s));
  std::vector<std::string> fixes;
  if (x.pageable_share && *x.pageable_share >= kPageableWarn) {
    f.evidence.push_back(fmt::format("{} of the bytes were copied from/to pageable memory (staged by the driver)",
                                     pct(*x.pageable_share)));
    fixes.push_back("copy from pinned buffers (cudaHostAlloc / cudaHostRegister) reused across requests");
  }
  if (x.small_copy_share && *x.small_copy_share >= kSmallCopyWarn) {
    f.evidence.push_back(fmt::format("{} of the copies moved less than 64 KiB: per-request copies, latency-bound",
                                     pct(*x.small_copy_share)));
    fixes.push_back("batch requests into fewer, larger transfers");
  }
  if (x.achieved_gbps && x.link_gbps)
    f.evidence.push_back(fmt::format("achieved {:.2f} GB/s in synchronous copies against the {} link's {:.1f} GB/s "
                                     "({} of peak)",
                                     *x.achieved_gbps, x.link_text, *x.link_gbps, pct(*x.achieved_gbps / *x.link_gbps)));
  const bool slow_link_use = x.achieved_gbps && x.link_gbps && *x.achieved_gbps < kLinkEfficiencyWarn * *x.link_gbps;
  // Copies that already run pinned, batched and near the link's speed are
  // transfer volume, not a PCIe problem: the lever left is moving fewer bytes.
  if (fixes.empty() && !slow_link_use) {
    f.severity = Status::Warn;
    f.evidence.push_back("copies are pinned and at least 64 KiB: no pageable or per-request copies to remove; only fewer bytes would help");
  }
  fixes.push_back("keep tensors resident on the GPU between requests and post-process results there instead of "
                  "copying them back");
  f.fix = fmt::format("{}.", fmt::join(fixes, "; "));
  f.sites = top_sites(m, {CallKind::Copy});
  return f;
}

// Device-to-device and peer copies move bytes in device memory (or between
// GPUs), not over the host's PCIe link: their time is the GPU's memory
// bandwidth (or the peer link) held up, and the fix is fewer copies.
std::optional<Finding> device_copy_finding(const TraceModel& m, const Metrics& x) {
  const double share = x.feeder_device_copy_share;
  const Status st = share_status(share, kFailShare, kWarnShare);
  if (st == Status::Pass) return std::nullopt;
  Finding f{"memory.device_copies", Bottleneck::MemoryBound, st, share,
            fmt::format("device-to-device copies hold the feeding thread {} of the time", pct(share)), {}, {}, {}};
  f.evidence.push_back(fmt::format("{} device-to-device copies ({}), {} peer copies ({}); none crossed the host's "
                                   "PCIe link",
                                   x.d2d_count, mib(x.d2d_bytes), x.peer_count, mib(x.peer_bytes)));
  if (x.peer_count > 0)
    for (const std::string& down : x.nvlinks_down)
      f.evidence.push_back(down + " at the start of capture: peer copies lose that share of NVLink bandwidth "
                                  "(gpuscope doctor's nvlink check)");
  if (x.wait_on_transfers_share > 0)
    f.evidence.push_back(fmt::format("a device-to-device cudaMemcpy returns before its bytes move: {} of wall time is "
                                     "synchronization waiting for queued copies (split with host copies by bytes)",
                                     pct(x.wait_on_transfers_share)));
  f.fix = "copy less: use views or in-place operations and write results where they are read; issue the copies "
          "that remain with cudaMemcpyAsync on a stream so the host does not wait; for peer copies enable peer "
          "access (cudaDeviceEnablePeerAccess) so they take NVLink or PCIe peer-to-peer, not a host bounce.";
  f.sites = top_sites(m, {CallKind::Copy, CallKind::Sync});
  return f;
}

std::optional<Finding> link_finding(const Metrics& x) {
  if (!x.link_gbps || !x.link_max_gbps || *x.link_gbps >= *x.link_max_gbps) return std::nullopt;
  const double copy_share = kind_share(x, CallKind::Copy);
  Finding f{"topology.pcie_link_degraded", Bottleneck::PcieBound, copy_share >= kWarnShare ? Status::Fail : Status::Warn,
            copy_share * (1.0 - *x.link_gbps / *x.link_max_gbps),
            fmt::format("the GPU's PCIe link runs at {} ({:.1f} GB/s), below its maximum {} ({:.1f} GB/s)",
                        x.link_text, *x.link_gbps, x.link_max_text, *x.link_max_gbps),
            {}, {}, {}};
  f.evidence.push_back("link generation/width from NVML at start of capture");
  f.fix = "reseat the card or move it to a full-width slot, check BIOS/ASPM link settings, and compare with "
          "`nvidia-smi -q -d PCIE` on a healthy node.";
  return f;
}

// A GPU whose clocks the hardware or software held down for a good part of
// the run: every kernel ran slower than that GPU can. A condition of the
// node, not a class of the program's bottleneck, so it warns and leaves the
// verdict to the program's findings; its evidence names the reasons as
// `gpuscope doctor`'s clocks check does (protocol/nvml_clock_events.h).
std::optional<Finding> clocks_finding(const Metrics& x) {
  constexpr unsigned long long kPowerCapBit = 0x4;  // nvmlClocksEventReasonSwPowerCap
  std::vector<const ClockSlowdown*> held;
  for (const ClockSlowdown& c : x.clock_slowdowns)
    if (c.of_samples >= kMinGpuSamples && static_cast<double>(c.samples) >= kClockSlowdownShare * c.of_samples)
      held.push_back(&c);
  if (held.empty()) return std::nullopt;
  const ClockSlowdown* worst = held.front();
  std::vector<std::string> reasons;
  Finding f{"gpu.clocks_slowdown", Bottleneck::Healthy, Status::Warn, 0, "", {}, {}, {}};
  f.node_condition = true;
  for (size_t i = 0; i < held.size(); ++i) {
    const ClockSlowdown* c = held[i];
    if (c->reason->severity > worst->reason->severity) worst = c;
    const double share = static_cast<double>(c->samples) / static_cast<double>(c->of_samples);
    reasons.push_back(fmt::format("GPU {} {} ({} of its NVML samples)", c->device, c->reason->name, pct(share)));
    f.evidence.push_back(fmt::format("GPU {}: {} ({} slowdown) in {} of {} NVML samples "
                                     "(nvmlDeviceGetCurrentClocksEventReasons)",
                                     c->device, c->reason->name,
                                     c->reason->severity == nvml::ClockEventSeverity::Fail ? "hardware" : "software",
                                     c->samples, c->of_samples));
    if (c->reason->bit == kPowerCapBit && c->power_limit_w != 0 && c->power_default_limit_w > c->power_limit_w)
      f.evidence.push_back(fmt::format("GPU {}: enforced power limit {} W, below the board's default {} W, at the "
                                       "start of capture (nvidia-smi -pl lowered it)",
                                       c->device, c->power_limit_w, c->power_default_limit_w));
    const bool last_of_gpu = i + 1 == held.size() || held[i + 1]->device != c->device;
    if (c->sm_clock_max != 0 && last_of_gpu)
      f.evidence.push_back(fmt::format("GPU {}: SM clock {}-{} MHz over the samples", c->device, c->sm_clock_min,
                                       c->sm_clock_max));
  }
  f.title = fmt::format("GPU clocks held down: {}", fmt::join(reasons, "; "));
  f.fix = fmt::format("{}; kernels ran slower than this GPU can, so compare their times only with runs on a healthy "
                      "GPU. `gpuscope doctor` on the node shows its clocks, power and cooling state now.",
                      worst->reason->fix);
  return f;
}

std::optional<Finding> sync_finding(const TraceModel& m, const Metrics& x) {
  // The other processes' part, when they hold the GPU, is their finding.
  const double share = stalling_sync_share(x) - others_part_of_sync_share(x);
  Status st = share_status(share, kFailShare, kWarnShare);
  // Waiting for a GPU that is busy the whole time is not a stall.
  const bool gpu_busy = x.gpu_util && *x.gpu_util >= kGpuBusy;
  const bool many_syncs = x.syncs_per_launch && *x.syncs_per_launch >= kSyncsPerLaunchWarn;
  if (st == Status::Pass || (gpu_busy && !many_syncs)) return std::nullopt;
  if (st == Status::Fail && gpu_busy) st = Status::Warn;
  Finding f{"sync.host_blocked_in_synchronization", Bottleneck::SyncBound, st, share,
            fmt::format("the feeding thread waits in explicit synchronization {} of the time", pct(share)), {}, {}, {}};
  for (size_t i = 0; i < std::min<size_t>(3, x.sync_calls.size()); ++i)
    f.evidence.push_back(fmt::format("{}: {} calls, {:.3f} s", x.sync_calls[i].first, x.sync_calls[i].second.count,
                                     x.sync_calls[i].second.ns / 1e9));
  if (x.syncs_per_launch)
    f.evidence.push_back(fmt::format("{:.2f} synchronizations per kernel launch ({} syncs, {} launches)",
                                     *x.syncs_per_launch, x.syncs, x.launches));
  if (x.waits_on_queued != 0)
    f.evidence.push_back(fmt::format("{} of the waits followed queued work ({} operations queued): {} of wall time "
                                     "on kernels{}, {} on copies and memsets (counted with the copies)",
                                     x.waits_on_queued, x.queued_ops, pct(x.wait_on_kernels_share),
                                     x.sparse_waits ? " (queued ahead: the GPU's time, not counted here)" : "",
                                     pct(x.wait_on_transfers_share)));
  if (x.drained_waits != 0 && x.drain_share >= 0.005)  // shows as at least 1 %
    f.evidence.push_back(fmt::format("after {} of the waits on kernels the GPU idled until the host queued more: the "
                                     "waits emptied its queue, and host and GPU took turns instead of overlapping; "
                                     "{} of wall time the GPU could have worked{}",
                                     x.drained_waits, pct(x.drain_share),
                                     x.sparse_waits ? " (counted here)" : " (within the waits counted here)"));
  if (gpu_held_by_others(x))
    f.evidence.push_back(fmt::format("other processes held {} of the GPU's busy time; their part of these waits is "
                                     "the finding about them",
                                     pct(*x.other_processes_share)));
  else if (x.gpu_util)
    f.evidence.push_back(fmt::format("GPU busy {} ({}): the GPU idles between short bursts", pct(*x.gpu_util),
                                     x.gpu_busy_source == "nvml" ? "NVML" : x.gpu_busy_source == "device"
                                                                             ? "device timestamps"
                                                                             : "inferred from the host"));
  f.fix = "launch work asynchronously and synchronize once per batch (or per result actually needed), on "
          "non-default streams; replace host-side waits with cudaStreamWaitEvent between streams; consider CUDA "
          "graphs for fixed launch sequences.";
  if (x.sparse_waits && x.drain_share > 0)
    f.fix = "queue the next step's work before waiting for this one's result (read each result a step late, or "
            "keep it on the GPU and read it every N steps), so the GPU has work while the host prepares more; " +
            f.fix;
  f.sites = top_sites(m, {CallKind::Sync});
  return f;
}

// Allocations that failed for want of memory, in a run without churn: a
// rate of a handful of calls is no churn, and "allocate once and reuse"
// is no answer to a GPU that is too small. Without GPU work the failing
// calls are the fallback finding's (fallback_rules.cpp).
std::optional<Finding> oom_finding(const TraceModel& m, const Metrics& x) {
  if (x.oom_errors == 0 || !x.gpu_work_done) return std::nullopt;
  if (x.stopped_on_error && x.stopped_on_error->code == kOutOfMemory) return std::nullopt;  // what it died of
  Finding f{"memory.out_of_memory", Bottleneck::MemoryBound, Status::Warn, 0.0,
            fmt::format("out of device memory: {} allocation call(s) failed", x.oom_errors), {}, {}, {}};
  f.evidence.push_back(fmt::format("{} allocations succeeded, {} frees", x.allocs, x.frees));
  f.evidence.push_back(fmt::format("live device memory peak {}, {} at the end (this process's allocations)",
                                   mib(x.live_peak_bytes), mib(x.live_end_bytes)));
  f.fix = std::string(kOutOfMemoryFix) + ".";
  f.sites = top_sites(m, {CallKind::Alloc});
  return f;
}

std::optional<Finding> alloc_finding(const TraceModel& m, const Metrics& x) {
  const double share = x.alloc_free_share;
  Status st = share_status(share, kAllocFailShare, kAllocWarnShare);
  // A rate from a handful of calls in a short run is not churn.
  const bool enough_calls = x.allocs + x.frees >= kMinAllocCallsForRate;
  if (!enough_calls) st = Status::Pass;  // a few slow allocations are not churn
  if (st == Status::Pass && enough_calls && x.alloc_rate_per_s >= kAllocWarnRate) st = Status::Warn;
  if (st == Status::Pass) return oom_finding(m, x);
  Finding f{"memory.allocator_churn", Bottleneck::MemoryBound, st, share,
            fmt::format("allocator churn: {:.0f} allocations+frees per second, {} of the feeding thread's time",
                        x.alloc_rate_per_s, pct(share)),
            {}, {}, {}};
  const bool physical = x.physical_allocs + x.physical_frees > 0;
  const bool all_physical = x.physical_allocs == x.allocs && x.physical_frees == x.frees;
  const bool mostly_physical = 2 * (x.physical_allocs + x.physical_frees) > x.allocs + x.frees;
  f.evidence.push_back(fmt::format("{} allocations, {} frees{}", x.allocs, x.frees,
                                   mostly_physical ? "" : "; cudaFree synchronizes the device"));
  if (physical)
    f.evidence.push_back(fmt::format(
        "{}{} allocations and {} frees were physical memory of CUDA's virtual memory API (cuMemCreate, cuMemRelease, "
        "with cuMemMap, cuMemSetAccess and cuMemUnmap around them): PyTorch's expandable segments or a VMM "
        "allocator growing and shrinking its mapped memory",
        all_physical ? "all " : "", x.physical_allocs, x.physical_frees));
  f.evidence.push_back(fmt::format("live device memory peak {}, {} at the end", mib(x.live_peak_bytes),
                                   mib(x.live_end_bytes)));
  if (x.live_growth_bytes && *x.live_growth_bytes > 0)
    f.evidence.push_back(fmt::format("live memory grew by {} after the first quarter of allocations",
                                     mib(*x.live_growth_bytes)));
  if (x.oom_errors) f.evidence.push_back(fmt::format("{} out-of-memory errors", x.oom_errors));
  f.fix = "allocate once and reuse: keep buffers in a pool sized for the largest shape (or use cudaMallocAsync "
          "with a memory pool), and never cudaFree on the request path.";
  if (physical)
    f.fix += " With PyTorch's expandable segments, stop giving mapped memory back inside the loop "
             "(torch.cuda.empty_cache(), a low garbage_collection_threshold in PYTORCH_CUDA_ALLOC_CONF): the next "
             "step maps it again.";
  f.sites = top_sites(m, {CallKind::Alloc, CallKind::Free});
  return f;
}

std::optional<Finding> dram_finding(const Metrics& x) {
  if (!x.dram_util || !x.gpu_util || *x.gpu_util < kGpuBusy) return std::nullopt;
  const double while_busy = std::min(1.0, *x.dram_util / *x.gpu_util);
  if (while_busy < kDramBusy) return std::nullopt;
  const double share = *x.gpu_util * while_busy;
  // DRAM-bound kernels are a problem to fix when traffic is redundant, as in
  // chains of elementwise kernels; alone they are at their roofline.
  const bool chains = x.fusion_share && *x.fusion_share >= kFusionShare;
  Finding f{"memory.dram_bound_kernels", Bottleneck::MemoryBound,
            chains ? share_status(share, kFailShare, kWarnShare) : Status::Warn, share,
            fmt::format("kernels are limited by device-memory bandwidth: DRAM at {} of its peak while the GPU is "
                        "busy ({} of the time)",
                        pct(while_busy), pct(*x.gpu_util)),
            {}, {}, {}};
  f.evidence.push_back(fmt::format("NVML over {} samples: DRAM bandwidth utilization {}{}, GPU utilization {}",
                                   x.gpu_samples, pct(*x.dram_util),
                                   x.sm_util ? fmt::format(", SM utilization {}", pct(*x.sm_util)) : "",
                                   pct(*x.gpu_util)));
  f.evidence.push_back("\"GPU busy\" here is time spent waiting on memory, not computing");
  if (x.other_processes_share && *x.other_processes_share >= kOtherProcessesShare)
    f.evidence.push_back(fmt::format("NVML's DRAM figure is the whole GPU's: other processes held {} of its busy "
                                     "time (most of it {}); GPU busy above is this process's part",
                                     pct(*x.other_processes_share), x.busiest_other_process));
  if (chains) {
    f.evidence.push_back(fmt::format("{} of kernel launches continue a chain of different kernels with the same "
                                     "grid on one stream (fusion candidates): {}",
                                     pct(*x.fusion_share), fmt::join(x.top_chains, ", ")));
    f.fix = "fuse the chained elementwise kernels so intermediates stay in registers instead of making a round "
            "trip through DRAM; then consider lower-precision storage where safe.";
  } else {
    f.fix = "no redundant traffic found: the kernels run at the memory roofline; only fewer bytes (lower-precision "
            "storage, better reuse in shared memory/L2) would speed them up.";
  }
  return f;
}

}  // namespace

std::vector<CallSite> top_sites(const TraceModel& m, std::initializer_list<CallKind> kinds, size_t n) {
  std::vector<CallSite> out;
  for (const auto& [key, site] : m.sites)
    if (std::find(kinds.begin(), kinds.end(), site.kind) != kinds.end())
      out.push_back(CallSite{m.summary.name_of(key.function_id), key.stack_id, site.calls.count, site.calls.ns});
  std::sort(out.begin(), out.end(), [](const CallSite& a, const CallSite& b) { return a.ns > b.ns; });
  // Sites under 1 % of the largest one are noise next to it.
  if (!out.empty()) std::erase_if(out, [&](const CallSite& s) { return s.ns * 100 < out.front().ns; });
  if (out.size() > n) out.resize(n);
  return out;
}

// Time in synchronization that is neither the copies it waited for (those
// count as copies) nor, when the work was queued well ahead, the GPU
// working through its queue (that is a busy GPU). Of such a wait, what
// stalls is what the GPU idled after it until the host queued more, when
// device timestamps show it (drain_share).
double stalling_sync_share(const Metrics& x) {
  double share = kind_share(x, CallKind::Sync) - x.wait_on_transfers_share;
  if (x.sparse_waits) share -= x.wait_on_kernels_share - x.drain_share;
  return std::max(0.0, share);
}

std::vector<Finding> data_movement_findings(const TraceModel& m, const Metrics& x) {
  std::vector<Finding> out;
  for (auto f : {pcie_finding(m, x), device_copy_finding(m, x), link_finding(x), sync_finding(m, x),
                 shared_gpu_finding(m, x), implicit_sync_finding(m, x), alloc_finding(m, x), dram_finding(x), clocks_finding(x)})
    if (f) out.push_back(std::move(*f));
  return out;
}

const char* bottleneck_label(Bottleneck b) {
  switch (b) {
    case Bottleneck::PcieBound: return "PCIe-bound";
    case Bottleneck::MemoryBound: return "memory-bound";
    case Bottleneck::SyncBound: return "sync-bound";
    case Bottleneck::CpuBound: return "CPU-bound";
    case Bottleneck::CpuFallback: return "silent CPU fallback";
    case Bottleneck::Healthy: return "healthy: GPU-bound";
    case Bottleneck::Inconclusive: return "no dominant bottleneck";
    case Bottleneck::CudaUnavailable: return "CUDA unavailable; the program failed";
    case Bottleneck::TooShort: return "too short to judge";
    case Bottleneck::NoCudaWork: return "no CUDA work";
    case Bottleneck::CudaError: return "failed on a CUDA error";
  }
  return "?";
}

const char* bottleneck_id(Bottleneck b) {
  switch (b) {
    case Bottleneck::PcieBound: return "pcie_bound";
    case Bottleneck::MemoryBound: return "memory_bound";
    case Bottleneck::SyncBound: return "sync_bound";
    case Bottleneck::CpuBound: return "cpu_bound";
    case Bottleneck::CpuFallback: return "cpu_fallback";
    case Bottleneck::Healthy: return "healthy";
    case Bottleneck::Inconclusive: return "inconclusive";
    case Bottleneck::CudaUnavailable: return "cuda_unavailable";
    case Bottleneck::TooShort: return "too_short";
    case Bottleneck::NoCudaWork: return "no_cuda_work";
    case Bottleneck::CudaError: return "cuda_error";
  }
  return "?";
}

bool is_cuda_verdict(Bottleneck b) { return b != Bottleneck::NoCudaWork; }

bool is_cuda_failure(Bottleneck b) {
  return b == Bottleneck::CpuFallback || b == Bottleneck::CudaUnavailable || b == Bottleneck::CudaError;
}

std::string finding_heading(const Finding& f) {
  const std::string label = bottleneck_label(f.cls);
  return f.title.starts_with(label) ? f.title : label + ": " + f.title;
}

const char* status_label(Status s) {
  switch (s) {
    case Status::Pass: return "pass";
    case Status::Warn: return "warn";
    case Status::Fail: return "fail";
    case Status::Unknown: return "n/a";
  }
  return "?";
}

}  // namespace gpuscope::analyzer
