// Co-tenants nobody traced (issue 24): the driver lists every process with
// work on a GPU, traced or not, in its per-process utilization samples
// (NVML, format 1.8), and the service's own trace carries them. Each other
// process on the service's GPUs becomes a GpuTenant whose busy time is its
// sampled share of each sample's window: an estimate as coarse as the
// windows (tens of milliseconds to a second), which says whether it was
// busy around the slow requests, not inside which call.
//
// The samples name processes in the driver's (the host's) pid namespace.
// A service in a container has another pid there, so when no sample names
// the service's own pid, the service cannot be told from its neighbours and
// the samples are not used (RequestLatency::DriverSamples says so).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "co_tenants.h"
#include "driver_samples.h"
#include "request_latency.h"
#include "trace_reader.h"
#include "trace_summary.h"

namespace gpuscope::analyzer {

class DriverSampleReader {
 public:
  void add(const reader::ChunkView& v);

  // One tenant per process other than the service (`self`) and the `traced`
  // pids, on the GPUs a sample named the service on; `status` says what the
  // samples allowed.
  GpuTenants tenants(const reader::TraceSummary& self, const std::vector<int>& traced,
                     RequestLatency::DriverSamples* status) const;

 private:
  struct Sample {
    uint64_t start, end;
    uint16_t device;
    uint8_t share_pct;
  };
  GpuTenant tenant_of(uint32_t pid, const std::vector<Sample>& samples, const std::vector<uint16_t>& devices) const;

  std::unordered_map<uint32_t, std::vector<Sample>> by_pid_;
  std::map<uint32_t, std::string> names_;
  uint64_t samples_ = 0;
};

}  // namespace gpuscope::analyzer
