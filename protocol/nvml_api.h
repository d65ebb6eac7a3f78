// The subset of NVML gpuscope uses, reached through dlopen: the toolkit
// ships no nvml.h, so the few types are declared here with the layouts and
// values of NVIDIA's header (NVML 12/13). Versioned entry points only
// (nvmlInit_v2, nvmlDeviceGetCount_v2, ...). Every function but the three
// needed to enumerate devices is optional: an older driver's library may
// lack it, and a query through a missing one answers kFunctionNotFound.
// Shared by the library's sampler (preload/gpu) and `gpuscope doctor`
// (analyzer/doctor), so both read a node the same way.
#pragma once

#include <string>

namespace gpuscope::nvml {

using Return = int;  // nvmlReturn_t
inline constexpr Return kSuccess = 0;
inline constexpr Return kInvalidArgument = 2;
inline constexpr Return kNotSupported = 3;
inline constexpr Return kNotFound = 6;
inline constexpr Return kInsufficientSize = 7;
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
struct ProcessInfo {  // nvmlProcessInfo_t (the v2 layout, for _v3 queries)
  unsigned pid;
  unsigned long long used_gpu_memory;
  unsigned gpu_instance_id, compute_instance_id;
};

// nvmlProcessUtilizationSample_t: one process's utilization over the
// driver's last sample period; timestamp in microseconds on the CPU's
// realtime clock.
struct ProcessUtilizationSample {
  unsigned pid;
  unsigned long long timestamp_us;
  unsigned sm_util, memory_util, encoder_util, decoder_util;
};

// nvmlDeviceAttributes_t: what a MIG device (or a whole GPU) has.
struct DeviceAttributes {
  unsigned multiprocessor_count, shared_copy_engine_count, shared_decoder_count, shared_encoder_count,
      shared_jpeg_count, shared_ofa_count, gpu_instance_slice_count, compute_instance_slice_count;
  unsigned long long memory_size_mb;
};

// NVML_NVLINK_MAX_LINKS (NVML 12 and later) and nvmlNvLinkErrorCounter_t.
inline constexpr unsigned kNvlinkMaxLinks = 18;
inline constexpr int kNvlinkErrorReplay = 0, kNvlinkErrorRecovery = 1, kNvlinkErrorCrcFlit = 2;

// nvmlPcieUtilCounter_t, nvmlClockType_t, nvmlTemperatureSensors_t,
// nvmlMemoryErrorType_t, nvmlEccCounterType_t.
inline constexpr int kPcieTxBytes = 0, kPcieRxBytes = 1;
inline constexpr int kClockSm = 1, kClockMem = 2;
inline constexpr int kTemperatureGpu = 0;
inline constexpr int kEccCorrected = 0, kEccUncorrected = 1;
inline constexpr int kVolatileEcc = 0, kAggregateEcc = 1;
inline constexpr int kEnabled = 1;  // nvmlEnableState_t
inline constexpr unsigned kAffinityScopeNode = 0;  // nvmlAffinityScope_t: NVML_AFFINITY_SCOPE_NODE

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
  Return (*system_get_cuda_driver_version_v2)(int*) = nullptr;
  Return (*device_get_minor_number)(Device, unsigned*) = nullptr;
  Return (*device_get_gpu_max_pcie_link_generation)(Device, unsigned*) = nullptr;
  Return (*device_get_pcie_replay_counter)(Device, unsigned*) = nullptr;
  Return (*device_get_max_clock_info)(Device, int, unsigned*) = nullptr;
  Return (*device_get_enforced_power_limit)(Device, unsigned*) = nullptr;
  Return (*device_get_power_management_default_limit)(Device, unsigned*) = nullptr;
  Return (*device_get_persistence_mode)(Device, int*) = nullptr;
  Return (*device_get_remapped_rows)(Device, unsigned*, unsigned*, unsigned*, unsigned*) = nullptr;
  Return (*device_get_retired_pages_pending_status)(Device, int*) = nullptr;
  Return (*device_get_compute_running_processes_v3)(Device, unsigned*, ProcessInfo*) = nullptr;
  // The clients of an MPS server on the device (the server itself is a compute process).
  Return (*device_get_mps_compute_running_processes_v3)(Device, unsigned*, ProcessInfo*) = nullptr;
  Return (*device_get_temperature)(Device, int, unsigned*) = nullptr;
  Return (*device_get_vbios_version)(Device, char*, unsigned) = nullptr;
  // The clocks the GPU is set to run applications at (nvidia-smi -ac), a
  // node's clocks policy, against their default (nvmlClockType_t).
  Return (*device_get_applications_clock)(Device, int, unsigned*) = nullptr;
  // Bit masks of so many unsigned longs: the CPUs near the GPU, and the NUMA
  // nodes near it (scope kAffinityScopeNode). Not nvmlDeviceGetNumaNodeId:
  // that names the GPU's own memory as a NUMA node, on coherent platforms only.
  Return (*device_get_cpu_affinity)(Device, unsigned, unsigned long*) = nullptr;
  Return (*device_get_memory_affinity)(Device, unsigned, unsigned long*, unsigned) = nullptr;
  // MIG devices (a GPU instance's compute instance) under a GPU in MIG mode;
  // an index without one answers kNotFound. The handle answers name, UUID,
  // memory and attributes like a GPU's.
  Return (*device_get_max_mig_device_count)(Device, unsigned*) = nullptr;
  Return (*device_get_mig_device_handle_by_index)(Device, unsigned, Device*) = nullptr;
  Return (*device_get_gpu_instance_id)(Device, unsigned*) = nullptr;
  Return (*device_get_compute_instance_id)(Device, unsigned*) = nullptr;
  Return (*device_get_attributes_v2)(Device, DeviceAttributes*) = nullptr;
  // NVLink: per link, whether it is active (nvmlEnableState_t), and its error counters.
  Return (*device_get_nvlink_state)(Device, unsigned, int*) = nullptr;
  Return (*device_get_nvlink_error_counter)(Device, unsigned, int, unsigned long long*) = nullptr;
  // Per-process utilization: samples newer than the last timestamp seen
  // (kNotFound: none), and the name of a process NVML listed.
  Return (*device_get_process_utilization)(Device, ProcessUtilizationSample*, unsigned*, unsigned long long) = nullptr;
  Return (*system_get_process_name)(unsigned, char*, unsigned) = nullptr;
  Return (*gpm_query_device_support)(Device, GpmSupport*) = nullptr;
  Return (*gpm_sample_alloc)(GpmSample*) = nullptr;
  Return (*gpm_sample_free)(GpmSample) = nullptr;
  Return (*gpm_sample_get)(Device, GpmSample) = nullptr;
  Return (*gpm_metrics_get)(GpmMetricsGet*) = nullptr;
};

// How entry points are found in the opened library: dlsym, or inside the
// preloaded library the real dlsym behind its override.
using SymbolLookup = void* (*)(void* handle, const char* name);

// dlopens `library` (RTLD_NOW | RTLD_LOCAL, never closed), resolves the
// entry points through `lookup` and calls nvmlInit_v2. False with a
// sentence in *status when NVML is unusable; "ok" otherwise.
bool open_nvml(const std::string& library, SymbolLookup lookup, Api* api, std::string* status);

// "Not Supported (3)": nvmlErrorString when the library has it.
std::string describe_return(const Api& api, Return r);

}  // namespace gpuscope::nvml
