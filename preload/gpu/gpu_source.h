// GPU-side evidence, gathered on its own thread and handed to the writer
// (issue 4):
//  - at start, the environment probe: /dev/nvidia* nodes and their access,
//    whether libcuda.so.1 loads and the driver version, NVML's status;
//  - at start, a DeviceInfo per GPU (NVML + sysfs NUMA node and local CPUs);
//  - every 1/nvml_hz seconds, a GpuSample per GPU (utilization, PCIe
//    throughput, clocks, throttle reasons, power, temperature, memory used,
//    and on Hopper+ the GPM DRAM-bandwidth and SM utilization).
// NVML is dlopen'ed (libnvidia-ml.so.1, RTLD_LOCAL); everything is optional:
// a missing library or an unsupported query is recorded as such, never an
// error.
#pragma once

#include <memory>

#include "config.h"
#include "trace_source.h"

namespace gpuscope::gpu {

std::unique_ptr<capture::TraceSource> make_gpu_source(const capture::CaptureConfig& config);

}  // namespace gpuscope::gpu
