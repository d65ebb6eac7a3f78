// One GPU's GpuSample records: each NVML metric query is one row of a table
// (query, valid bit, fields), so an unsupported metric costs one failed
// call, once. GPM (Hopper and later) needs two snapshots, so its SM and
// DRAM-bandwidth utilization appear from the second sample on.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gpuscope_generated.h"
#include "nvml_api.h"

namespace gpuscope::gpu {

class DeviceSampler {
 public:
  DeviceSampler(const nvml::Api& api, nvml::Device device, uint16_t index);
  ~DeviceSampler();
  DeviceSampler(const DeviceSampler&) = delete;
  DeviceSampler& operator=(const DeviceSampler&) = delete;

  // Queries every metric still thought supported; `valid` names those
  // answered. Unknown GPM values are 0xFF.
  fb::GpuSample sample(uint64_t now_ns);

  // Metric queries found unsupported so far (after the first sample: all).
  const std::vector<std::string>& unsupported() const { return unsupported_; }

 private:
  struct Gpm;
  void start_gpm();
  uint32_t sample_gpm(uint8_t* sm_util, uint8_t* dram_util);

  const nvml::Api& api_;
  nvml::Device device_;
  uint16_t index_;
  uint32_t skip_ = 0;  // bit i: query i of the table is unsupported here
  std::vector<std::string> unsupported_;
  std::unique_ptr<Gpm> gpm_;
};

}  // namespace gpuscope::gpu
