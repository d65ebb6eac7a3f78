#include "nvml_api.h"

#include <dlfcn.h>

#include <string>

#include "real_symbol.h"

namespace gpuscope::gpu::nvml {
namespace {

template <class F> void resolve(void* handle, F& slot, const char* name) {
  const capture::DlsymFn lookup = capture::real_dlsym();  // not the dlsym override
  slot = lookup != nullptr ? reinterpret_cast<F>(lookup(handle, name)) : nullptr;
}

void resolve_all(void* h, Api& a) {
  resolve(h, a.init_v2, "nvmlInit_v2");
  resolve(h, a.device_get_count_v2, "nvmlDeviceGetCount_v2");
  resolve(h, a.device_get_handle_by_index_v2, "nvmlDeviceGetHandleByIndex_v2");
  resolve(h, a.error_string, "nvmlErrorString");
  resolve(h, a.system_get_driver_version, "nvmlSystemGetDriverVersion");
  resolve(h, a.device_get_name, "nvmlDeviceGetName");
  resolve(h, a.device_get_uuid, "nvmlDeviceGetUUID");
  resolve(h, a.device_get_pci_info_v3, "nvmlDeviceGetPciInfo_v3");
  resolve(h, a.device_get_memory_info, "nvmlDeviceGetMemoryInfo");
  resolve(h, a.device_get_curr_pcie_link_generation, "nvmlDeviceGetCurrPcieLinkGeneration");
  resolve(h, a.device_get_max_pcie_link_generation, "nvmlDeviceGetMaxPcieLinkGeneration");
  resolve(h, a.device_get_curr_pcie_link_width, "nvmlDeviceGetCurrPcieLinkWidth");
  resolve(h, a.device_get_max_pcie_link_width, "nvmlDeviceGetMaxPcieLinkWidth");
  resolve(h, a.device_get_mig_mode, "nvmlDeviceGetMigMode");
  resolve(h, a.device_get_ecc_mode, "nvmlDeviceGetEccMode");
  resolve(h, a.device_get_total_ecc_errors, "nvmlDeviceGetTotalEccErrors");
  resolve(h, a.device_get_utilization_rates, "nvmlDeviceGetUtilizationRates");
  resolve(h, a.device_get_pcie_throughput, "nvmlDeviceGetPcieThroughput");
  resolve(h, a.device_get_clock_info, "nvmlDeviceGetClockInfo");
  resolve(h, a.device_get_clocks_event_reasons, "nvmlDeviceGetCurrentClocksEventReasons");
  if (a.device_get_clocks_event_reasons == nullptr)  // drivers before r535
    resolve(h, a.device_get_clocks_event_reasons, "nvmlDeviceGetCurrentClocksThrottleReasons");
  resolve(h, a.device_get_power_usage, "nvmlDeviceGetPowerUsage");
  resolve(h, a.device_get_temperature, "nvmlDeviceGetTemperature");
  resolve(h, a.gpm_query_device_support, "nvmlGpmQueryDeviceSupport");
  resolve(h, a.gpm_sample_alloc, "nvmlGpmSampleAlloc");
  resolve(h, a.gpm_sample_free, "nvmlGpmSampleFree");
  resolve(h, a.gpm_sample_get, "nvmlGpmSampleGet");
  resolve(h, a.gpm_metrics_get, "nvmlGpmMetricsGet");
}

}  // namespace

std::string describe_return(const Api& api, Return r) {
  const char* text = api.error_string != nullptr ? api.error_string(r) : nullptr;
  if (r == kFunctionNotFound && text == nullptr) text = "Function Not Found";
  return (text != nullptr ? std::string(text) + " " : std::string()) + "(" + std::to_string(r) + ")";
}

bool open_nvml(const std::string& library, Api* api, std::string* status) {
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);  // kept loaded for good
  if (handle == nullptr) {
    const char* why = dlerror();
    *status = why != nullptr ? why : library + " could not be loaded";
    return false;
  }
  Api a;
  resolve_all(handle, a);
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

}  // namespace gpuscope::gpu::nvml
