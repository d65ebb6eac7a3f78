// One GPU's ProcessGpuSample records (format 1.8): the driver's per-process
// utilization (nvmlDeviceGetProcessUtilization), polled with the GpuSamples.
// It lists every process with work on the GPU, traced or not, which is how
// the analyzer finds a co-tenant nobody traced.
//
// NVML stamps its samples in microseconds on the CPU's realtime clock; each
// is moved onto CLOCK_MONOTONIC with the two clocks read together at the
// poll. A stamp that lands far from the poll (a realtime clock stepped, a
// driver that stamps otherwise) is replaced by the poll's time and flagged.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "gpuscope_generated.h"
#include "nvml_api.h"
#include "side_tables.h"

namespace gpuscope::gpu {

struct ProcessFindings {
  std::vector<fb::ProcessGpuSample> samples;
  std::vector<container::GpuProcessName> names;  // processes seen for the first time
};

class ProcessSampler {
 public:
  // Samples before `start_ns` (CLOCK_MONOTONIC) are not asked for.
  ProcessSampler(const nvml::Api& api, nvml::Device device, uint16_t index, uint64_t start_ns);

  // Appends the samples the driver took since the previous poll.
  void poll(ProcessFindings& out);

  // Empty, or the query's name and why this GPU does not answer it.
  const std::string& unsupported() const { return unsupported_; }

 private:
  void add_sample(const nvml::ProcessUtilizationSample& s, uint64_t mono_now, uint64_t real_now, ProcessFindings& out);
  void name_process(unsigned pid, ProcessFindings& out);

  const nvml::Api& api_;
  nvml::Device device_;
  uint16_t index_;
  unsigned long long last_seen_us_;  // the newest driver stamp taken
  uint64_t previous_ns_;             // monotonic time of the newest sample taken
  std::string unsupported_;
  std::set<unsigned> named_;
  std::vector<nvml::ProcessUtilizationSample> buffer_;
};

}  // namespace gpuscope::gpu
