// Host-side causes: a CPU that starves the GPU and a launch-bound loop;
// with them, the fallback findings of fallback_rules.cpp.
#include <algorithm>
#include <optional>

#include "rules_internal.h"

namespace gpuscope::analyzer {
namespace {

// The thread feeding the GPU is itself computing (where known; otherwise
// the process as a whole is on CPU).
bool host_cpu_busy(const Metrics& x) {
  if (x.feeder_cpu_util) return *x.feeder_cpu_util >= kHostBusyCpu;
  return x.process_cpu_cores && *x.process_cpu_cores >= kHostBusyCpu;
}

bool host_cores_saturated(const Metrics& x) {
  return x.process_cpu_cores && x.online_cpus > 1 && *x.process_cpu_cores >= kCoresUsed * x.online_cpus;
}


// The feeding thread's range that held most of the GPU's idle time, when it
// held at least kRangeIdleShare of it: the host stage the GPU waited for
// (a DataLoader step, an optimizer step), whether that stage computed or
// waited on worker processes.
// A range that covers the whole run names the stage only when no narrower
// one does (metrics' covers_run: a loop of nothing but that stage).
const RangeIdleCover* idle_holder(const Metrics& x) {
  const RangeIdleCover* wide = nullptr;
  for (const RangeIdleCover& c : x.idle_under_ranges) {
    if (c.share_of_idle < kRangeIdleShare) continue;
    if (!c.covers_run) return &c;
    if (wide == nullptr) wide = &c;
  }
  return wide;
}

bool contains_any(const std::string& s, std::initializer_list<const char*> parts) {
  for (const char* p : parts)
    if (s.find(p) != std::string::npos) return true;
  return false;
}

// The fix that fits the stage the GPU waited for.
std::string host_stage_fix(const RangeIdleCover* holder) {
  const std::string name = holder != nullptr ? holder->name : "";
  if (contains_any(name, {"DataLoader", "dataloader", "__next__", "collate", "Dataset", "dataset"}))
    return "the input pipeline holds the GPU: raise the DataLoader's num_workers (0 loads on the training thread "
           "itself), set pin_memory=True and copy with non_blocking=True, raise prefetch_factor and keep "
           "persistent_workers; move decoding and augmentation to the GPU, or cache preprocessed data.";
  if (contains_any(name, {"Optimizer", "optimizer", "optim"}))
    return "the optimizer step runs on the host between GPU work: use a fused or foreach optimizer "
           "(fused=True / foreach=True), or capture the step in a CUDA graph; overlap it with the next "
           "step's input copy.";
  return "parallelize the host stage (preprocessing, tokenization, data loading) across cores and overlap it "
         "with GPU work (double-buffered pinned staging, a second stream); move work to the GPU; pin the "
         "feeding threads near the GPU's NUMA node.";
}

// At least this share of the holder's idle time the feeding thread spent
// inside CUDA calls: all its time outside CUDA, over the whole run, could
// not cover more of the held idle time than it lasted.
double holder_in_cuda_share(const Metrics& x, const RangeIdleCover& holder) {
  if (holder.idle_s <= 0) return 0;
  return std::max(0.0, holder.idle_s - x.feeder_outside_cuda_share * x.wall_s) / holder.idle_s;
}

// The kind of CUDA call (initialization aside) the feeding thread was
// blocked in longest.
CallKind feeder_longest_kind(const Metrics& x) {
  CallKind best = CallKind::Other;
  for (size_t k = 0; k < kCallKinds; ++k)
    if (static_cast<CallKind>(k) != CallKind::Init && x.feeder_share[k] > x.feeder_share[static_cast<size_t>(best)])
      best = static_cast<CallKind>(k);
  return best;
}

// A stage that held the GPU idle while its thread sat in CUDA calls (a
// first convolution's workspace frees and module loads, say) did not
// starve the GPU with host work: splitting it across cores would not help.
// The finding stays, as a warning that says what the thread waited in.
void blocked_stage(const TraceModel& m, const Metrics& x, const RangeIdleCover& holder, double in_cuda, Finding* f) {
  const CallKind kind = feeder_longest_kind(x);
  if (f->severity == Status::Fail) f->severity = Status::Warn;
  f->title = fmt::format("the GPU idles while {} holds the feeding thread in CUDA calls ({} of the GPU's idle time)",
                         holder.name, pct(holder.share_of_idle));
  f->evidence.push_back(fmt::format("the feeding thread was inside CUDA calls for at least {} of that time (it spent "
                                    "{:.3f} s outside CUDA in the whole run); longest: {}, {}",
                                    pct(in_cuda), x.feeder_outside_cuda_share * x.wall_s, call_kind_name(kind),
                                    pct(x.feeder_share[static_cast<size_t>(kind)])));
  f->fix = fmt::format("look at the {} calls inside {} (call sites below): allocate once or through a caching "
                       "allocator instead of freeing and allocating per call, and warm up (first-use module loading, "
                       "library autotuning) before the part that is timed.",
                       call_kind_name(kind), holder.name);
  f->sites = top_sites(m, {kind}, 2);
}

void add_range_evidence(const Metrics& x, Finding* f) {
  for (const RangeIdleCover& c : x.idle_under_ranges)
    f->evidence.push_back(fmt::format("{}{}: {} instance(s) held {:.3f} s of the GPU's {:.3f} s idle ({})", c.name,
                                      c.domain.empty() ? "" : " [" + c.domain + "]", c.count, c.idle_s, x.gpu_idle_s,
                                      pct(c.share_of_idle)));
  for (const GpuTimeSplit& t : x.gpu_time_breakdown)
    if (t.host_wait_share)
      f->evidence.push_back(fmt::format("GPU idle between operations: host wait {}, kernel wait {}, other {}",
                                        pct(*t.host_wait_share), pct(*t.kernel_wait_share), pct(*t.other_wait_share)));
}

std::optional<Finding> cpu_finding(const TraceModel& m, const Metrics& x) {
  const double outside = x.feeder_outside_cuda_share;
  const bool gpu_idle = !x.gpu_util || *x.gpu_util < kGpuIdle;
  const RangeIdleCover* holder = idle_holder(x);
  // A named host stage that held the GPU idle is evidence enough once the
  // idle time matters (>= kFailShare of the time), however busy the GPU
  // was the rest of it; without one, a mostly idle GPU and a busy CPU are.
  const bool held_idle = holder != nullptr && x.gpu_util && 1.0 - *x.gpu_util >= kFailShare;
  // Without GPU work there is no GPU to starve (fallback or no CUDA work).
  if (!x.gpu_work_done || x.host_threads_with_cuda == 0) return std::nullopt;
  if (!held_idle && !(gpu_idle && host_cpu_busy(x))) return std::nullopt;
  // The GPU's idle right after waits that emptied its queue is the sync
  // finding's (stalling_sync_share): overlapping host and GPU would have
  // filled it without a faster host.
  const double drained = x.sparse_waits ? x.drain_share : 0.0;
  const double share = std::max(0.0, (held_idle && x.wall_s > 0 ? holder->idle_s / x.wall_s
                                                                 : outside * (x.gpu_util ? 1.0 - *x.gpu_util : 1.0)) -
                                         drained);
  Status st = share_status(share, kFailShare, kWarnShare);
  if (st == Status::Pass) return std::nullopt;
  // A host stage that already uses every core, or whose work is already
  // spread over threads, has no serial part left to split.
  const bool spread = x.feeder_cpu_share && *x.feeder_cpu_share < kSerialShare;
  if (host_cores_saturated(x) || spread) st = Status::Warn;
  const std::string title =
      held_idle
          ? fmt::format("the GPU waits for the host: {} held the feeding thread for {} of the GPU's idle time",
                        holder->name, pct(holder->share_of_idle))
          : fmt::format("the GPU waits for the host: the feeding thread spends {} of the time outside CUDA", pct(outside));
  Finding f{"cpu.gpu_starved_by_host", Bottleneck::CpuBound, st, share, title, {}, {}, {}};
  if (x.feeder_cpu_util || x.process_cpu_cores) f.evidence.push_back(cpu_evidence(x));
  else f.evidence.push_back("host CPU time: not in this trace (the host ranges say what the thread was in)");
  if (x.gpu_util)
    f.evidence.push_back(fmt::format("GPU busy {} ({})", pct(*x.gpu_util),
                                     x.gpu_busy_source == "device" ? "device timestamps" : "NVML"));
  else f.evidence.push_back("no GPU utilization samples: judged from the host side alone");
  if (drained >= 0.005)  // shows as at least 1 %
    f.evidence.push_back(fmt::format("{} of wall time is not counted here: the GPU idled after waits that emptied its "
                                     "queue, which overlapping would fill (the synchronization finding)",
                                     pct(drained)));
  add_range_evidence(x, &f);
  f.fix = host_stage_fix(holder);
  if (held_idle) {
    const double in_cuda = holder_in_cuda_share(x, *holder);
    if (in_cuda >= kBlockedStageShare) {
      blocked_stage(m, x, *holder, in_cuda, &f);
      return f;
    }
  }
  // The CPU samples say where the host time went; without them (sampling
  // off, unavailable, or an older trace) the CUDA calls around it are all there is.
  if (!cite_host_samples(m, &f)) f.sites = top_sites(m, {CallKind::Copy, CallKind::Launch, CallKind::Sync}, 2);
  return f;
}

// Device timestamps mean CUPTI traced the kernels, and that tracing made
// every launch slower than it is untraced. The finding fails only if it
// still would without that cost; either way the evidence says how much of
// the launch time may be the profiler's own.
void discount_tracing_cost(const Metrics& x, double share, Finding* f) {
  if (x.wall_s <= 0 || x.launches == 0) return;
  const double traced_s = x.launches * kTracedLaunchCostUs / 1e6;
  const double untraced = std::max(0.0, share - traced_s / x.wall_s);
  f->evidence.push_back(fmt::format("device tracing (CUPTI) adds about {:.0f} us to each launch (measured on an H200): "
                                    "up to {:.3f} s of this time; untraced, launches would hold about {:.1f}% of it",
                                    kTracedLaunchCostUs, traced_s, untraced * 100));
  if (f->severity == Status::Fail && untraced < kLaunchShareFail) f->severity = Status::Warn;
}

// A launch costs microseconds. Launches that average far more did work
// inside the call (compiling PTX for this GPU, loading a module on first
// use, a profiler replaying each kernel): fewer launches would not help,
// and the count alone does not make it launch-bound.
void slow_launches(double us, Finding* f) {
  if (f->severity == Status::Fail) f->severity = Status::Warn;
  f->title = fmt::format("launches are slow, not many: {:.1f} ms each on the host, while a launch costs a few us", us / 1e3);
  f->evidence.push_back(fmt::format("at {:.0f} us or more per launch the time is work inside the launch call, not "
                                    "launch overhead", kSlowLaunchUs));
  f->fix = "find what the launch call does: JIT compilation of PTX (build for this GPU's architecture, or keep "
           "CUDA_CACHE_PATH warm), first-use module loading (warm up before the timed part), or a profiler that "
           "replays kernels (CUPTI range profiling); fusing kernels would not help.";
}

std::optional<Finding> launch_finding(const TraceModel& m, const Metrics& x) {
  const double share = kind_share(x, CallKind::Launch);
  const Status st = share_status(share, kLaunchShareFail, kWarnShare);
  // Launch calls also block when the GPU's queue is full: that is a busy
  // GPU pushing back, not launch overhead. What counts is the GPU while the
  // launches were issued; idle setup or verification around them does not
  // make a back-pressured loop launch-bound.
  if (st == Status::Pass || launches_pushed_back(x)) return std::nullopt;
  const double us = x.launches ? m.host_by_kind[static_cast<size_t>(CallKind::Launch)].ns / 1e3 / x.launches : 0;
  Finding f{"cpu.launch_bound", Bottleneck::CpuBound, st, share,
            fmt::format("launch-bound: the feeding thread spends {} of the time launching kernels while the GPU idles", pct(share)),
            {}, {}, {}};
  f.evidence.push_back(fmt::format("{} launches, {:.1f} us each on the host", x.launches, us));
  if (x.gpu_util_during_launches)
    f.evidence.push_back(fmt::format("GPU busy {} from the first launch to the last", pct(*x.gpu_util_during_launches)));
  if (x.device_timestamps) discount_tracing_cost(x, share, &f);
  f.fix = "launch fewer, larger kernels (fuse small ones), or capture the fixed sequence once in a CUDA graph "
          "and replay it with cudaGraphLaunch.";
  f.sites = top_sites(m, {CallKind::Launch});
  if (us >= kSlowLaunchUs) slow_launches(us, &f);
  return f;
}

}  // namespace

std::string cpu_evidence(const Metrics& x) {
  std::string s = "host CPU:";
  if (x.process_cpu_cores) s += fmt::format(" the process used {:.2f} cores on average", *x.process_cpu_cores);
  if (x.feeder_cpu_util) s += fmt::format("; the feeding thread was on CPU {} of its time", pct(*x.feeder_cpu_util));
  if (x.feeder_cpu_share) s += fmt::format(" and did {} of the process's CPU work", pct(*x.feeder_cpu_share));
  return s;
}

std::vector<Finding> host_findings(const TraceModel& m, const Metrics& x) {
  std::vector<Finding> out;
  for (auto f : {fallback_finding(m, x), stopped_on_error_finding(m, x), cpu_finding(m, x), launch_finding(m, x)})
    if (f) out.push_back(std::move(*f));
  return out;
}

}  // namespace gpuscope::analyzer
