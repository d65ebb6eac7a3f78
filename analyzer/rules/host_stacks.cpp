// CPU-bound evidence from CPU stack samples (HostSample, format 1.4): where
// the host's CPU time went, and the common host-side costs the samples'
// innermost frames name (docs/rules.md, "CPU-bound").
#include <algorithm>

#include "rules_internal.h"

namespace gpuscope::analyzer {
namespace {

constexpr size_t kHostStacksShown = 3;

double cost_share(const HostSampleStats& h, HostCost cost) {
  return static_cast<double>(h.profile.by_cost[static_cast<size_t>(cost)]) / static_cast<double>(h.samples);
}

std::string sampling_line(const TraceModel& m) {
  const HostSampleStats& h = m.host_samples;
  const auto& status = m.summary.host_sampling;
  const double period_ms = status && status->period_ns ? status->period_ns / 1e6 : 0;
  return fmt::format("CPU samples: {} over {} thread(s){}", h.samples, h.by_thread.size(),
                     period_ms > 0 ? fmt::format(", one per {:.1f} ms of a thread's CPU time in user mode", period_ms)
                                   : "");
}

// The host costs the samples name, one line each, and what to do about them.
void name_host_costs(const HostSampleStats& h, Finding* f) {
  const double memset = cost_share(h, HostCost::Memset), memcpy = cost_share(h, HostCost::Memcpy);
  const double alloc = cost_share(h, HostCost::Allocator), kernel = h.system_share();
  if (memset >= kHostCostShare)
    f->evidence.push_back(fmt::format("{} of the samples are in memset: host buffers zeroed or filled", pct(memset)));
  if (memcpy >= kHostCostShare)
    f->evidence.push_back(fmt::format("{} of the samples are in memcpy/memmove: data copied between host buffers",
                                      pct(memcpy)));
  if (alloc >= kHostCostShare)
    f->evidence.push_back(fmt::format("{} of the samples are in the allocator (malloc/free/new/delete)", pct(alloc)));
  if (kernel >= kKernelCpuShare)
    f->evidence.push_back(fmt::format("{} of the process's CPU time was in the kernel (not sampled: user mode only)",
                                      pct(kernel)));
  const bool fresh_buffers = kernel >= kKernelCpuShare && memset + alloc >= kHostCostShare / 2;
  if (fresh_buffers) {
    f->evidence.push_back("fresh pageable buffers: new host memory is page-faulted and zeroed on every request");
    f->fix = "allocate host buffers once and reuse them across requests (a pool; pinned with cudaHostAlloc when they "
             "are copied to the GPU), instead of fresh, zero-initialized ones per request; " + f->fix;
  } else if (memset >= kHostCostShare || memcpy >= kHostCostShare) {
    f->fix = "drop the host-side memset/memcpy between copies (cudaMemsetAsync on the device, copy straight from "
             "the source buffer); " + f->fix;
  }
  const double top = static_cast<double>(h.profile.hottest_samples) / static_cast<double>(h.samples);
  if (top >= kSerialLoopShare &&
      classify_host_function(h.profile.hottest_function) == HostCost::Program)
    f->evidence.push_back(fmt::format("{} of the samples are in one function of the program, {}: a serial host loop",
                                      pct(top), h.profile.hottest_function));
}

}  // namespace

bool cite_host_samples(const TraceModel& m, Finding* f) {
  const HostSampleStats& h = m.host_samples;
  if (h.samples == 0) return false;
  f->evidence.push_back(sampling_line(m));
  if (!h.profile.hottest_function.empty())
    f->evidence.push_back(fmt::format("hottest function: {} ({} of the samples)", h.profile.hottest_function,
                                      pct(static_cast<double>(h.profile.hottest_samples) / h.samples)));
  name_host_costs(h, f);
  for (const HostStackShare& s : h.profile.top) {
    if (f->host_stacks.size() == kHostStacksShown) break;
    f->host_stacks.push_back({s.stack_id, s.samples, static_cast<double>(s.samples) / static_cast<double>(h.samples)});
  }
  return true;
}

}  // namespace gpuscope::analyzer
