#include "nvml_api.h"

#include <dlfcn.h>

#include <string>

namespace gpuscope::nvml {
namespace {

// Binds each entry point of one library to its slot of Api.
struct Resolver {
  void* handle;
  SymbolLookup lookup;
  template <class F> void operator()(F& slot, const char* name) const {
    slot = lookup != nullptr ? reinterpret_cast<F>(lookup(handle, name)) : nullptr;
  }
};

void resolve_device_health(const Resolver& resolve, Api& a) {
  resolve(a.system_get_cuda_driver_version_v2, "nvmlSystemGetCudaDriverVersion_v2");
  resolve(a.device_get_minor_number, "nvmlDeviceGetMinorNumber");
  resolve(a.device_get_gpu_max_pcie_link_generation, "nvmlDeviceGetGpuMaxPcieLinkGeneration");
  resolve(a.device_get_pcie_replay_counter, "nvmlDeviceGetPcieReplayCounter");
  resolve(a.device_get_max_clock_info, "nvmlDeviceGetMaxClockInfo");
  resolve(a.device_get_enforced_power_limit, "nvmlDeviceGetEnforcedPowerLimit");
  resolve(a.device_get_power_management_default_limit, "nvmlDeviceGetPowerManagementDefaultLimit");
  resolve(a.device_get_persistence_mode, "nvmlDeviceGetPersistenceMode");
  resolve(a.device_get_remapped_rows, "nvmlDeviceGetRemappedRows");
  resolve(a.device_get_retired_pages_pending_status, "nvmlDeviceGetRetiredPagesPendingStatus");
  resolve(a.device_get_compute_running_processes_v3, "nvmlDeviceGetComputeRunningProcesses_v3");
  resolve(a.device_get_mps_compute_running_processes_v3, "nvmlDeviceGetMPSComputeRunningProcesses_v3");
  resolve(a.device_get_cpu_affinity, "nvmlDeviceGetCpuAffinity");
  resolve(a.device_get_memory_affinity, "nvmlDeviceGetMemoryAffinity");
  resolve(a.device_get_vbios_version, "nvmlDeviceGetVbiosVersion");
  resolve(a.device_get_applications_clock, "nvmlDeviceGetApplicationsClock");
}

void resolve_partitions_and_links(const Resolver& resolve, Api& a) {
  resolve(a.device_get_max_mig_device_count, "nvmlDeviceGetMaxMigDeviceCount");
  resolve(a.device_get_mig_device_handle_by_index, "nvmlDeviceGetMigDeviceHandleByIndex");
  resolve(a.device_get_gpu_instance_id, "nvmlDeviceGetGpuInstanceId");
  resolve(a.device_get_compute_instance_id, "nvmlDeviceGetComputeInstanceId");
  resolve(a.device_get_attributes_v2, "nvmlDeviceGetAttributes_v2");
  resolve(a.device_get_nvlink_state, "nvmlDeviceGetNvLinkState");
  resolve(a.device_get_nvlink_error_counter, "nvmlDeviceGetNvLinkErrorCounter");
}

void resolve_all(const Resolver& resolve, Api& a) {
  resolve(a.init_v2, "nvmlInit_v2");
  resolve(a.device_get_count_v2, "nvmlDeviceGetCount_v2");
  resolve(a.device_get_handle_by_index_v2, "nvmlDeviceGetHandleByIndex_v2");
  resolve(a.error_string, "nvmlErrorString");
  resolve(a.system_get_driver_version, "nvmlSystemGetDriverVersion");
  resolve(a.device_get_name, "nvmlDeviceGetName");
  resolve(a.device_get_uuid, "nvmlDeviceGetUUID");
  resolve(a.device_get_pci_info_v3, "nvmlDeviceGetPciInfo_v3");
  resolve(a.device_get_memory_info, "nvmlDeviceGetMemoryInfo");
  resolve(a.device_get_curr_pcie_link_generation, "nvmlDeviceGetCurrPcieLinkGeneration");
  resolve(a.device_get_max_pcie_link_generation, "nvmlDeviceGetMaxPcieLinkGeneration");
  resolve(a.device_get_curr_pcie_link_width, "nvmlDeviceGetCurrPcieLinkWidth");
  resolve(a.device_get_max_pcie_link_width, "nvmlDeviceGetMaxPcieLinkWidth");
  resolve(a.device_get_mig_mode, "nvmlDeviceGetMigMode");
  resolve(a.device_get_ecc_mode, "nvmlDeviceGetEccMode");
  resolve(a.device_get_total_ecc_errors, "nvmlDeviceGetTotalEccErrors");
  resolve(a.device_get_utilization_rates, "nvmlDeviceGetUtilizationRates");
  resolve(a.device_get_pcie_throughput, "nvmlDeviceGetPcieThroughput");
  resolve(a.device_get_clock_info, "nvmlDeviceGetClockInfo");
  resolve(a.device_get_clocks_event_reasons, "nvmlDeviceGetCurrentClocksEventReasons");
  if (a.device_get_clocks_event_reasons == nullptr)  // drivers before r535
    resolve(a.device_get_clocks_event_reasons, "nvmlDeviceGetCurrentClocksThrottleReasons");
  resolve(a.device_get_power_usage, "nvmlDeviceGetPowerUsage");
  resolve(a.device_get_temperature, "nvmlDeviceGetTemperature");
  resolve(a.device_get_process_utilization, "nvmlDeviceGetProcessUtilization");
  resolve(a.system_get_process_name, "nvmlSystemGetProcessName");
  resolve(a.gpm_query_device_support, "nvmlGpmQueryDeviceSupport");
  resolve(a.gpm_sample_alloc, "nvmlGpmSampleAlloc");
  resolve(a.gpm_sample_free, "nvmlGpmSampleFree");
  resolve(a.gpm_sample_get, "nvmlGpmSampleGet");
  resolve(a.gpm_metrics_get, "nvmlGpmMetricsGet");
  resolve_device_health(resolve, a);
  resolve_partitions_and_links(resolve, a);
}

}  // namespace

std::string describe_return(const Api& api, Return r) {
  const char* text = api.error_string != nullptr ? api.error_string(r) : nullptr;
  if (r == kFunctionNotFound && text == nullptr) text = "Function Not Found";
  return (text != nullptr ? std::string(text) + " " : std::string()) + "(" + std::to_string(r) + ")";
}

bool open_nvml(const std::string& library, SymbolLookup lookup, Api* api, std::string* status) {
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);  // kept loaded for good
  if (handle == nullptr) {
    const char* why = dlerror();
    *status = why != nullptr ? why : library + " could not be loaded";
    return false;
  }
  Api a;
  resolve_all(Resolver{handle, lookup}, a);
  const char* missing = a.init_v2 == nullptr                       ? "nvmlInit_v2"
                        : a.device_get_count_v2 == nullptr           ? "nvmlDeviceGetCount_v2"
                        : a.device_get_handle_by_index_v2 == nullptr ? "nvmlDeviceGetHandleByIndex_v2"
                                                                     : nullptr;
  if (missing != nullptr) {
    *status = library + " has no " + missing;
    return false;
  }
  const Return r = a.init_v2();
  if (r != kSuccess) {
    *status = "nvmlInit_v2 failed: " + describe_return(a, r);
    return false;
  }
  *api = a;
  *status = "ok";
  return true;
}

}  // namespace gpuscope::nvml
