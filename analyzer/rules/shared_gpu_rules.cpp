// Other processes on this process's GPU, from the driver's per-process
// samples (metrics: other_processes_share). The GPU time-slices between
// processes, so this process's synchronizations also wait for their work,
// and NVML's GPU-wide utilization counts it as busy: without this rule a
// process starved by a co-tenant reads as "healthy: GPU-bound", or as a
// sync stall whose fix (fewer synchronizations) would not help.
//
// The part of the feeding thread's waits for the GPU put on the other
// processes is those waits (stalling synchronization, and launches a full
// queue blocks) times their part of the GPU's busy time; the rest of the
// synchronization stays its own finding's, so no second decides two
// verdicts (pushed-back launches are no other finding's).
#include <algorithm>
#include <optional>

#include "rules_internal.h"

namespace gpuscope::analyzer {

std::string shared_gpu_remedies(const std::string& subject, const std::string& other) {
  return fmt::format("Give {} a GPU or a MIG instance of its own, run {} under MPS with a "
                     "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE limit, or schedule it away from {}'s busy hours",
                     subject, other, subject);
}

bool gpu_held_by_others(const Metrics& x) {
  return x.other_processes_share && *x.other_processes_share >= kOtherProcessesShare && x.nvml_gpu_util &&
         x.gpu_samples >= kMinGpuSamples && *x.nvml_gpu_util >= kGpuBusy;
}

double others_part_of_sync_share(const Metrics& x) {
  return gpu_held_by_others(x) ? stalling_sync_share(x) * *x.other_processes_share : 0;
}

bool launches_pushed_back(const Metrics& x) {
  const std::optional<double> busy = x.gpu_util_during_launches ? x.gpu_util_during_launches
                                     : x.nvml_gpu_util_all      ? x.nvml_gpu_util_all
                                                                : x.gpu_util;
  return busy && *busy >= kGpuBusy;
}

namespace {
// "pid 4417 (batch_embed)", or "3 processes, most pid 4417 (batch_embed)".
std::string who_else(const Metrics& x) {
  if (x.other_processes <= 1) return x.busiest_other_process.empty() ? "another process" : x.busiest_other_process;
  return fmt::format("{} processes, most {}", x.other_processes, x.busiest_other_process);
}
}  // namespace

std::optional<Finding> shared_gpu_finding(const TraceModel& m, const Metrics& x) {
  if (!gpu_held_by_others(x)) return std::nullopt;
  const double launch = launches_pushed_back(x) ? kind_share(x, CallKind::Launch) : 0;
  const double whole = *x.nvml_gpu_util, others = *x.other_processes_share;
  const double share = (stalling_sync_share(x) + launch) * others;
  const Status st = share_status(share, kFailShare, kWarnShare);
  if (st == Status::Pass) return std::nullopt;
  Finding f{"sync.waits_for_other_processes", Bottleneck::SyncBound, st, share,
            fmt::format("other processes keep this GPU busy: the feeding thread waits for their work about {} of "
                        "the time ({} held {} of the GPU's busy time)",
                        pct(share), who_else(x), pct(others)),
            {}, {}, {}};
  f.evidence.push_back(fmt::format("NVML: the GPU {} busy over {} samples; by the driver's per-process samples other "
                                   "processes held {} of that (most of it {}), this process about {}",
                                   pct(whole), x.gpu_samples, pct(others), x.busiest_other_process,
                                   pct(whole * (1 - others))));
  for (size_t i = 0; i < std::min<size_t>(3, x.sync_calls.size()); ++i)
    f.evidence.push_back(fmt::format("{}: {} calls, {:.3f} s", x.sync_calls[i].first, x.sync_calls[i].second.count,
                                     x.sync_calls[i].second.ns / 1e9));
  f.evidence.push_back(fmt::format("the feeding thread stalls in explicit synchronization {} of the time{}; the "
                                   "other processes' part of that ({}, as of the GPU's busy time) is this finding",
                                   pct(stalling_sync_share(x)),
                                   launch > 0 ? fmt::format(" and in launches the full queue blocks {}", pct(launch))
                                              : "",
                                   pct(others)));
  f.evidence.push_back("blind spot: the driver's samples say who used the GPU in each sampling window, not which of "
                       "this process's waits their work delayed, so the split is an estimate; trace the other "
                       "process too (the same gpuscope run) to see its kernels");
  f.fix = fmt::format("this process shares its GPU with {}: the GPU time-slices the processes, so its work waits "
                      "behind theirs whatever it does itself. {}.",
                      who_else(x),
                      shared_gpu_remedies("this program", "the other job"));
  f.sites = top_sites(m, {CallKind::Sync, CallKind::Launch});
  return f;
}

}  // namespace gpuscope::analyzer
