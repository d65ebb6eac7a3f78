// What the process can see of the GPU stack below NVML: the /dev/nvidia*
// nodes and whether the CUDA driver library loads. The evidence behind
// "this process never reached a GPU".
#pragma once

#include <string>
#include <vector>

#include "side_tables.h"

namespace gpuscope::gpu {

// Every `dev_dir`/nvidia* entry, plus nvidiactl and nvidia-uvm (and nvidia0
// when no numbered node exists) marked missing when absent; sorted by path.
std::vector<container::DeviceNodeState> probe_device_nodes(const std::string& dev_dir);

// dlopens `library` (RTLD_LAZY | RTLD_LOCAL, never closed) and asks it for
// cuDriverGetVersion; fills driver_loaded, driver_error, driver_version.
void probe_driver(const std::string& library, container::EnvironmentProbeData& probe);

}  // namespace gpuscope::gpu
