// Where the GPU source looks for things. The defaults are the real ones;
// tests point them at simgpu's libraries, a missing library, or a fake
// /dev and sysfs tree.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "trace_source.h"

namespace gpuscope::gpu {

struct GpuSourceOptions {
  std::string nvml_library = "libnvidia-ml.so.1";
  std::string driver_library = "libcuda.so.1";
  std::string dev_dir = "/dev";
  std::string pci_devices_dir = "/sys/bus/pci/devices";
  uint32_t nvml_hz = 20;  // 0: devices are described, never sampled
};

std::unique_ptr<capture::TraceSource> make_gpu_source(const GpuSourceOptions& options);

}  // namespace gpuscope::gpu
