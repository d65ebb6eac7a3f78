// The subset of NVML gpuscope uses, reached through dlopen: the toolkit
// ships no nvml.h, so the few types are declared here with the layouts and
// values of NVIDIA's header (NVML 12/13). Versioned entry points only
// (nvmlInit_v2, nvmlDeviceGetCount_v2, ...). Every function but the three
// needed to enumerate devices is optional: an older driver's library may
// lack it, and a query through a missing one answers kFunctionNotFound.
#pragma once

#include <string>

namespace gpuscope::gpu::nvml {

using Return = int;  // nvmlReturn_t
inline constexpr Return kSuccess = 0;
inline constexpr Return kNotSupported = 3;
inline constexpr Return kFunctionNotFound = 13;

struct DeviceSt;
using Device = DeviceSt*;

struct PciInfo {  // nvmlPciInfo_t (v3)
  char bus_id_legacy[16];
  unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
};
struct Utilization {
  unsigned gpu, memory;
};
struct Memory {
  unsigned long long total, free, used;
};

// nvmlPcieUtilCounter_t, nvmlClockType_t, nvmlTemperatureSensors_t,
// nvmlMemoryErrorType_t, nvmlEccCounterType_t.
inline constexpr int kPcieTxBytes = 0, kPcieRxBytes = 1;
inline constexpr int kClockSm = 1, kClockMem = 2;
inline constexpr int kTemperatureGpu = 0;
inline constexpr int kEccCorrected = 0, kEccUncorrected = 1;
inline constexpr int kAggregateEcc = 1;

// GPM (Hopper and later).
struct GpmSample {
  void* handle;
};
struct GpmMetric {
  unsigned metric_id;
  Return nvml_return;
  double value;
  char *short_name, *long_name, *unit;
};
inline constexpr unsigned kGpmMetricMax = 333;
struct GpmMetricsGet {
  unsigned version;  // kGpmMetricsGetVersion
  unsigned num_metrics;
  GpmSample sample1, sample2;
  GpmMetric metrics[kGpmMetricMax];
};
struct GpmSupport {
  unsigned version;  // kGpmSupportVersion
  unsigned is_supported_device;
};
inline constexpr unsigned kGpmMetricsGetVersion = 1, kGpmSupportVersion = 1;
inline constexpr unsigned kGpmSmUtil = 2, kGpmDramBwUtil = 10;

struct Api {
  // Required.
  Return (*init_v2)() = nullptr;
  Return (*device_get_count_v2)(unsigned*) = nullptr;
  Return (*device_get_handle_by_index_v2)(unsigned, Device*) = nullptr;
  // Optional.
  const char* (*error_string)(Return) = nullptr;
  Return (*system_get_driver_version)(char*, unsigned) = nullptr;
  Return (*device_get_name)(Device, char*, unsigned) = nullptr;
  Return (*device_get_uuid)(Device, char*, unsigned) = nullptr;
  Return (*device_get_pci_info_v3)(Device, PciInfo*) = nullptr;
  Return (*device_get_memory_info)(Device, Memory*) = nullptr;
  Return (*device_get_curr_pcie_link_generation)(Device, unsigned*) = nullptr;
  Return (*device_get_max_pcie_link_generation)(Device, unsigned*) = nullptr;
  Return (*device_get_curr_pcie_link_width)(Device, unsigned*) = nullptr;
  Return (*device_get_max_pcie_link_width)(Device, unsigned*) = nullptr;
  Return (*device_get_mig_mode)(Device, unsigned*, unsigned*) = nullptr;
  Return (*device_get_ecc_mode)(Device, int*, int*) = nullptr;
  Return (*device_get_total_ecc_errors)(Device, int, int, unsigned long long*) = nullptr;
  Return (*device_get_utilization_rates)(Device, Utilization*) = nullptr;
  Return (*device_get_pcie_throughput)(Device, int, unsigned*) = nullptr;
  Return (*device_get_clock_info)(Device, int, unsigned*) = nullptr;
  Return (*device_get_clocks_event_reasons)(Device, unsigned long long*) = nullptr;
  Return (*device_get_power_usage)(Device, unsigned*) = nullptr;
  Return (*device_get_temperature)(Device, int, unsigned*) = nullptr;
  Return (*gpm_query_device_support)(Device, GpmSupport*) = nullptr;
  Return (*gpm_sample_alloc)(GpmSample*) = nullptr;
  Return (*gpm_sample_free)(GpmSample) = nullptr;
  Return (*gpm_sample_get)(Device, GpmSample) = nullptr;
  Return (*gpm_metrics_get)(GpmMetricsGet*) = nullptr;
};

// dlopens `library` (RTLD_NOW | RTLD_LOCAL, never closed), resolves the
// entry points and calls nvmlInit_v2. False with a sentence in *status
// when NVML is unusable; "ok" otherwise.
bool open_nvml(const std::string& library, Api* api, std::string* status);

// "Not Supported (3)": nvmlErrorString when the library has it.
std::string describe_return(const Api& api, Return r);

}  // namespace gpuscope::gpu::nvml
