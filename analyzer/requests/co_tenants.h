// Other processes on the same GPU during the requests (issue 24): a
// service's slow requests may be slow because another process held the GPU
// they needed. Each trace given with the service's (the traces of one
// `gpuscope run`, or several runs' together) is read once for when its
// process kept the GPU busy: from its device records (CUPTI: its kernels,
// copies and memsets, exact), else from its outermost CUDA calls that wait
// for its own device work (synchronization, copies, memsets, frees: a
// host-side estimate). Traces of one boot share CLOCK_MONOTONIC, so the
// intervals line up with the service's requests as they are. A process is
// the service's co-tenant when it ran on the same boot of the same host and
// on a GPU the service used (by UUID; a trace that names no GPU is taken at
// its word for the host's only GPUs). docs/rules.md "Co-tenants".
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "request_latency.h"
#include "trace_reader.h"
#include "trace_summary.h"

namespace gpuscope::analyzer {

// A stretch of time during which a process held `share` of the GPU (the
// driver's per-process samples say how much, not exactly when).
struct SharedSpan {
  uint64_t start = 0, end = 0;
  double share = 0;  // 0..1
};

// One process's GPU occupancy, on the host's monotonic clock.
struct GpuTenant {
  std::string trace;  // the file it came from; empty: known from the driver's samples only
  int pid = 0;
  std::string exe, boot_id, hostname;
  std::vector<std::string> gpu_uuids;  // the GPUs its trace describes
  BusyFrom busy_from = BusyFrom::WaitingCalls;
  bool damaged = false;                // its trace is damaged or truncated: busy time past that is not seen
  std::vector<std::pair<uint64_t, uint64_t>> busy;  // sorted, disjoint [start, end)
  std::vector<SharedSpan> shares;      // DriverSamples: sorted, disjoint
  uint64_t sample_window_ns = 0;       // DriverSamples: the median span of one sample
  // Busy time inside [from, to): whole spans' overlap, shares' overlap
  // times their share.
  uint64_t busy_within(uint64_t from, uint64_t to) const;
};

// One pass over the opened trace `name` for its process's GPU occupancy (a
// damaged trace gives what was readable; pipeline.h opens the files).
GpuTenant read_gpu_tenant(reader::TraceReader& trace, const std::string& name);

using GpuTenants = std::vector<GpuTenant>;

// The tenants that shared a GPU with the process `self` describes: same
// boot, another pid, a GPU UUID in common (or no UUIDs on either side).
std::vector<const GpuTenant*> co_tenants_of(const reader::TraceSummary& self, const GpuTenants& all);

// How many of `all` are another process's trace than the one `self` describes.
uint64_t others_than(const reader::TraceSummary& self, const GpuTenants& all);

// A tail or median-band request's span (1 tail, 2 median band).
struct GroupedSpan {
  uint64_t start_ns = 0, end_ns = 0;
  uint8_t group = 0;
};

// Each co-tenant's busy time inside the tail's and the band's requests, and
// how many requests of each it covered kCoTenantShare of or more; co-tenants
// busy during none of them are left out.
std::vector<CoTenantOverlap> overlap_co_tenants(const std::vector<GroupedSpan>& spans,
                                                const std::vector<const GpuTenant*>& tenants);

}  // namespace gpuscope::analyzer
