// A GPU as NVML and sysfs describe it at capture start.
#pragma once

#include <cstdint>
#include <string>

#include "nvml_api.h"
#include "side_tables.h"

namespace gpuscope::gpu {

// One DeviceDescription from NVML's static queries; every query that
// answers "not supported" (or whose entry point this NVML lacks) is named
// in `unsupported`. NUMA node and local CPUs come from
// `pci_devices_dir`/<bus id>/ (sysfs).
container::DeviceDescription describe_device(const nvml::Api& api, nvml::Device device, uint32_t index,
                                           const std::string& pci_devices_dir);

// NVML's bus id ("00000000:18:00.0") in the form sysfs names devices
// ("0000:18:00.0"): four-digit domain, lower case. Empty when malformed.
std::string sysfs_pci_address(const std::string& nvml_bus_id);

// numa_node and local_cpulist of the device at `device_dir`; left at
// -1 / empty where sysfs does not say.
void read_pci_topology(const std::string& device_dir, container::DeviceDescription& d);

// The name an unanswered query is listed under in `unsupported`.
std::string unsupported_name(const char* query, nvml::Return r);

}  // namespace gpuscope::gpu
