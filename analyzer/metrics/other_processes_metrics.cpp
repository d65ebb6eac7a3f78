// Other processes on this process's GPUs, from the driver's per-process
// samples (TraceModel::driver_busy_ns): their part of the busy time the
// driver charged on the GPUs where a sample named this process, the busiest
// of them, and, from kOtherProcessesShare on, NVML's GPU-wide utilization
// scaled to this process's part (docs/rules.md, "The whole run, too").
// Runs after gpu_metrics, whose figure it may scale.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "metrics.h"

namespace gpuscope::analyzer {

void other_processes_metrics(const TraceModel& m, Metrics& x) {
  if (!m.summary.process) return;
  const auto self = static_cast<uint32_t>(m.summary.process->pid);
  double own = 0, others = 0, busiest_ns = 0;
  uint32_t busiest = 0;
  std::map<uint32_t, double> other_by_pid;
  for (const auto& [device, by_pid] : m.driver_busy_ns) {
    if (!by_pid.contains(self)) continue;
    for (const auto& [pid, ns] : by_pid) {
      if (pid == self) {
        own += ns;
        continue;
      }
      others += ns;
      const double theirs = other_by_pid[pid] += ns;
      if (theirs > busiest_ns) {
        busiest_ns = theirs;
        busiest = pid;
      }
    }
  }
  if (own + others <= 0) return;
  x.other_processes_share = others / (own + others);
  x.other_processes = static_cast<size_t>(
      std::count_if(other_by_pid.begin(), other_by_pid.end(), [](const auto& p) { return p.second > 0; }));
  if (busiest != 0) {
    const auto name = m.gpu_process_names.find(busiest);
    x.busiest_other_process = fmt::format("pid {}{}", busiest,
                                          name != m.gpu_process_names.end() ? " (" + name->second + ")" : "");
  }
  if (x.gpu_busy_source != "nvml" || *x.other_processes_share < kOtherProcessesShare) return;
  x.nvml_gpu_util_all = x.gpu_util;
  x.gpu_util = *x.gpu_util * (1 - *x.other_processes_share);
}

}  // namespace gpuscope::analyzer
