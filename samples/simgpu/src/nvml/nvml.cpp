// simgpu's libnvidia-ml.so.1.  Static facts (name, PCI, link, clocks, ECC,
// MIG) come from the node description; everything that moves (utilization,
// PCIe throughput, memory in use, processes, power, temperature) is derived
// from the activity the simulated driver logs in shared memory, so NVML
// answers for the whole simulated GPU whichever process asks.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <mutex>
#include <string>

#include "../common/clock.hpp"
#include "nvml_state.hpp"

using simgpu::DeviceDesc;
using simgpu::nvml::State;
using simgpu::nvml::with_device;
using simgpu::nvml::with_any_device;
using simgpu::nvml::realtime_us;

namespace {

constexpr unsigned kDramActivities = simgpu::kAllActivities;
constexpr unsigned kH2D = simgpu::activity_bit(simgpu::Activity::CopyH2D);
constexpr unsigned kD2H = simgpu::activity_bit(simgpu::Activity::CopyD2H);
constexpr unsigned kVideoClockMhz = 1755;

std::mutex g_mu;
int g_refs = 0;
// Never destroyed, like the node it points into: a sampler thread may still
// be inside an NVML call while the process runs its exit handlers (a real
// libnvidia-ml does not free its device state at exit either).
State& g_state = *new State;
std::atomic<const State*> g_current{nullptr};

nvmlReturn_t copy_string(const std::string& s, char* out, unsigned length) {
  if (!out) return NVML_ERROR_INVALID_ARGUMENT;
  if (s.size() + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(out, s.c_str(), s.size() + 1);
  return NVML_SUCCESS;
}

int64_t ms_to_ns(double ms) { return static_cast<int64_t>(ms * 1e6); }

double gpu_util(const nvmlDevice_st& d, const State& s) {
  return s.shared->busy_percent(static_cast<int>(d.index), simgpu::kKernelActivities, simgpu::now_ns(),
                                ms_to_ns(s.node->utilization_window_ms));
}

// NVML's "memory" utilization: the share of DRAM bandwidth in use.
double memory_util(const nvmlDevice_st& d, const State& s) {
  const double bps = s.shared->bytes_per_second(static_cast<int>(d.index), kDramActivities, simgpu::now_ns(),
                                                ms_to_ns(s.node->utilization_window_ms));
  return std::clamp(100.0 * bps / (d.desc->dram_gbps * 1e9), 0.0, 100.0);
}

// The processes driving the simulated GPU, then the node's other tenants
// (those of an MPS server, with `mps`, or the others).
std::vector<simgpu::ProcessUsage> compute_processes(const nvmlDevice_st& d, const State& s, bool mps = false) {
  std::vector<simgpu::ProcessUsage> procs;
  if (!mps) procs = s.shared->processes(static_cast<int>(d.index));
  for (const simgpu::Tenant& t : d.desc->tenants)
    if (t.mps == mps) procs.push_back(simgpu::ProcessUsage{t.pid, t.memory_bytes});
  return procs;
}

// NVML's two-call protocol for a process list: too small a buffer answers
// Insufficient Size with the count needed.
nvmlReturn_t copy_processes(const std::vector<simgpu::ProcessUsage>& procs, unsigned* count, nvmlProcessInfo_t* infos) {
  if (!count) return NVML_ERROR_INVALID_ARGUMENT;
  const unsigned capacity = *count;
  *count = static_cast<unsigned>(procs.size());
  if (capacity < procs.size() || (!infos && !procs.empty())) return NVML_ERROR_INSUFFICIENT_SIZE;
  for (size_t i = 0; i < procs.size(); ++i)
    infos[i] = nvmlProcessInfo_t{static_cast<unsigned>(procs[i].pid), procs[i].memory_bytes, 0xFFFFFFFFu, 0xFFFFFFFFu};
  return NVML_SUCCESS;
}

uint64_t memory_used(const nvmlDevice_st& d, const State& s) {
  uint64_t used = d.desc->reserved_bytes;
  for (const simgpu::ProcessUsage& p : compute_processes(d, s)) used += p.memory_bytes;
  return std::min(used, d.desc->memory_bytes);
}

void field_value(const nvmlDevice_st& d, const State& s, nvmlFieldValue_t& v) {
  v.timestamp = realtime_us();
  v.latencyUsec = 0;
  const unsigned mask = v.fieldId == NVML_FI_DEV_PCIE_COUNT_TX_BYTES   ? kD2H
                        : v.fieldId == NVML_FI_DEV_PCIE_COUNT_RX_BYTES ? kH2D
                                                                       : 0;
  if (!mask) {
    v.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
    return;
  }
  // Cumulative bytes over the link: TX leaves the GPU (device-to-host).
  v.valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
  v.value.ullVal = static_cast<unsigned long long>(
      s.shared->totals(static_cast<int>(d.index), mask, simgpu::now_ns()).bytes);
  v.nvmlReturn = NVML_SUCCESS;
}

const char* error_string(nvmlReturn_t r) {
  switch (r) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "Argument version mismatch";
    default: return "Unknown Error";
  }
}

}  // namespace

const State* simgpu::nvml::state() { return g_current.load(std::memory_order_acquire); }

extern "C" {

nvmlReturn_t nvmlInit_v2(void) {
  std::lock_guard lock(g_mu);
  if (g_refs++ > 0) return NVML_SUCCESS;
  const auto& node = simgpu::process_node();
  if (!node) {
    --g_refs;
    return NVML_ERROR_UNKNOWN;  // the bad node file was reported on stderr
  }
  // A node without devices is a driver that sees no GPU: init succeeds and
  // the device count is 0, as nvidia-smi's "No devices were found".
  g_state.node = &*node;
  g_state.shared = &simgpu::SharedState::of(*node);
  g_state.devices.clear();
  g_state.mig_handles.clear();
  for (size_t i = 0; i < node->devices.size(); ++i) {
    g_state.devices.push_back(nvmlDevice_st{static_cast<unsigned>(i), &node->devices[i]});
    for (const simgpu::MigDevice& m : node->devices[i].mig_devices)
      g_state.mig_handles.push_back(nvmlDevice_st{static_cast<unsigned>(i), &node->devices[i], &m});
  }
  g_current.store(&g_state, std::memory_order_release);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlInit(void) { return nvmlInit_v2(); }
nvmlReturn_t nvmlInitWithFlags(unsigned int) { return nvmlInit_v2(); }

nvmlReturn_t nvmlShutdown(void) {
  std::lock_guard lock(g_mu);
  if (g_refs == 0) return NVML_ERROR_UNINITIALIZED;
  // Handles stay valid memory after the last shutdown; only the flag drops,
  // so a sampler thread racing a shutdown reads UNINITIALIZED, not garbage.
  if (--g_refs == 0) g_current.store(nullptr, std::memory_order_release);
  return NVML_SUCCESS;
}

const char* nvmlErrorString(nvmlReturn_t result) { return error_string(result); }

nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  const State* s = simgpu::nvml::state();
  return s ? copy_string(s->node->driver_version, version, length) : NVML_ERROR_UNINITIALIZED;
}

nvmlReturn_t nvmlSystemGetNVMLVersion(char* version, unsigned int length) {
  const State* s = simgpu::nvml::state();
  return s ? copy_string("13." + s->node->driver_version, version, length) : NVML_ERROR_UNINITIALIZED;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* version) {
  const State* s = simgpu::nvml::state();
  if (!s) return NVML_ERROR_UNINITIALIZED;
  if (!version) return NVML_ERROR_INVALID_ARGUMENT;
  *version = s->node->cuda_driver_version;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* version) { return nvmlSystemGetCudaDriverVersion_v2(version); }

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  const State* s = simgpu::nvml::state();
  if (!s) return NVML_ERROR_UNINITIALIZED;
  if (!count) return NVML_ERROR_INVALID_ARGUMENT;
  *count = static_cast<unsigned>(s->devices.size());
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  const State* s = simgpu::nvml::state();
  if (!s) return NVML_ERROR_UNINITIALIZED;
  if (!device || index >= s->devices.size()) return NVML_ERROR_INVALID_ARGUMENT;
  if (s->devices[index].desc->lost) return NVML_ERROR_GPU_IS_LOST;
  *device = const_cast<nvmlDevice_t>(&s->devices[index]);
  return NVML_SUCCESS;
}

// The pre-_v2 names that programs built against old headers still bind to.
nvmlReturn_t nvmlDeviceGetCount(unsigned int* count) { return nvmlDeviceGetCount_v2(count); }
nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t* device) {
  return nvmlDeviceGetHandleByIndex_v2(index, device);
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* device) {
  const State* s = simgpu::nvml::state();
  if (!s) return NVML_ERROR_UNINITIALIZED;
  if (!uuid || !device) return NVML_ERROR_INVALID_ARGUMENT;
  for (const nvmlDevice_st& d : s->devices) {
    if (d.desc->uuid == uuid) {
      *device = const_cast<nvmlDevice_t>(&d);
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* bus_id, nvmlDevice_t* device) {
  const State* s = simgpu::nvml::state();
  if (!s) return NVML_ERROR_UNINITIALIZED;
  if (!bus_id || !device) return NVML_ERROR_INVALID_ARGUMENT;
  for (const nvmlDevice_st& d : s->devices) {
    if (strcasecmp(d.desc->pci_bus_id.c_str(), bus_id) == 0) {
      *device = const_cast<nvmlDevice_t>(&d);
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int* index) {
  return with_device(device, [&](const nvmlDevice_st& d, const State&) {
    if (!index) return NVML_ERROR_INVALID_ARGUMENT;
    *index = d.index;
    return NVML_SUCCESS;
  });
}

// A MIG device is named after its GPU and profile, as the driver names it.
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  return with_any_device(device, [&](const nvmlDevice_st& d, const State&) {
    return copy_string(d.mig ? d.desc->name + " MIG " + d.mig->profile : d.desc->name, name, length);
  });
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  return with_any_device(device, [&](const nvmlDevice_st& d, const State&) {
    return copy_string(d.mig ? d.mig->uuid : d.desc->uuid, uuid, length);
  });
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return with_device(device, [&](const nvmlDevice_st& d, const State&) {
    if (!pci) return NVML_ERROR_INVALID_ARGUMENT;
    std::memset(pci, 0, sizeof *pci);
    const DeviceDesc& x = *d.desc;
    pci->domain = x.pci_domain;
    pci->bus = x.pci_bus;
    pci->device = x.pci_device;
    pci->pciDeviceId = x.pci_device_id;
    std::snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.0", x.pci_domain, x.pci_bus, x.pci_device);
    std::snprintf(pci->busId, sizeof pci->busId, "%s", x.pci_bus_id.c_str());
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int* major, int* minor) {
  return with_device(device, [&](const nvmlDevice_st& d, const State&) {
    if (!major || !minor) return NVML_ERROR_INVALID_ARGUMENT;
    *major = d.desc->cc_major;
    *minor = d.desc->cc_minor;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t* util) {
  return with_device(device, [&](const nvmlDevice_st& d, const State& s) {
    if (!util) return NVML_ERROR_INVALID_ARGUMENT;
    if (d.desc->mig_mode) return NVML_ERROR_NOT_SUPPORTED;  // as on a real MIG-enabled GPU
    util->gpu = static_cast<unsigned>(gpu_util(d, s) + 0.5);
    util->memory = static_cast<unsigned>(memory_util(d, s) + 0.5);
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  return with_device(device, [&](const nvmlDevice_st& d, const State& s) {
    if (!memory) return NVML_ERROR_INVALID_ARGUMENT;
    memory->total = d.desc->memory_bytes;
    memory->used = memory_used(d, s);
    memory->free = memory->total - memory->used;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* count, nvmlProcessInfo_t* infos) {
  return with_device(device, [&](const nvmlDevice_st& d, const State& s) {
    return copy_processes(compute_processes(d, s), count, infos);
  });
}

nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* count,
                                                        nvmlProcessInfo_t* infos) {
  return with_device(device, [&](const nvmlDevice_st& d, const State& s) {
    return copy_processes(compute_processes(d, s, true), count, infos);
  });
}

nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t device, nvmlPcieUtilCounter_t counter, unsigned int* value) {
  return with_device(device, [&](const nvmlDevice_st& d, const State& s) {
    if (!value || (counter != NVML_PCIE_UTIL_TX_BYTES && counter != NVML_PCIE_UTIL_RX_BYTES))
      return NVML_ERROR_INVALID_ARGUMENT;
    if (s.node->pcie_query_ms > 0) {
      const auto wait_ns = static_cast<long long>(ms_to_ns(s.node->pcie_query_ms));
      const timespec wait{static_cast<time_t>(wait_ns / 1'000'000'000), static_cast<long>(wait_ns % 1'000'000'000)};
      nanosleep(&wait, nullptr);
    }
    const unsigned mask = counter == NVML_PCIE_UTIL_TX_BYTES ? kD2H : kH2D;
    const double bps = s.shared->bytes_per_second(static_cast<int>(d.index), mask, simgpu::now_ns(),
                                                  ms_to_ns(s.node->pcie_window_ms));
    *value = static_cast<unsigned>(bps / 1024.0);  // KB/s
    return NVML_SUCCESS;
  });
}

}  // extern "C"

// Entry points that report one unsigned fact about a device, as a table.
#define SIMGPU_NVML_UNSIGNED(name, expr)                                            \
  extern "C" nvmlReturn_t name(nvmlDevice_t device, unsigned int* out) {            \
    return with_device(device, [&](const nvmlDevice_st& d, const State& s) {       \
      (void)s;                                                                       \
      if (!out) return NVML_ERROR_INVALID_ARGUMENT;                                  \
      *out = static_cast<unsigned>(expr);                                            \
      return NVML_SUCCESS;                                                           \
    });                                                                              \
  }

SIMGPU_NVML_UNSIGNED(nvmlDeviceGetCurrPcieLinkGeneration, d.desc->pcie.gen_current)
SIMGPU_NVML_UNSIGNED(nvmlDeviceGetCurrPcieLinkWidth, d.desc->pcie.width_current)
SIMGPU_NVML_UNSIGNED(nvmlDeviceGetMaxPcieLinkGeneration, d.desc->pcie.gen_max)
SIMGPU_NVML_UNSIGNED(nvmlDeviceGetGpuMaxPcieLinkGeneration, d.desc->pcie.gen_max)
SIMGPU_NVML_UNSIGNED(nvmlDeviceGetMaxPcieLinkWidth, d.desc->pcie.width_max)
SIMGPU_NVML_UNSIGNED(nvmlDeviceGetPowerManagementLimit, d.desc->power_limit_w * 1000)
SIMGPU_NVML_UNSIGNED(nvmlDeviceGetEnforcedPowerLimit, d.desc->power_limit_w * 1000)
SIMGPU_NVML_UNSIGNED(nvmlDeviceGetPowerManagementDefaultLimit, d.desc->power_default_limit_w * 1000)
SIMGPU_NVML_UNSIGNED(nvmlDeviceGetNumGpuCores, d.desc->sm_count * 128)
SIMGPU_NVML_UNSIGNED(nvmlDeviceGetMinorNumber, d.desc->minor_number)
SIMGPU_NVML_UNSIGNED(nvmlDeviceGetPcieReplayCounter, d.desc->pcie.replays)
// Power (mW) follows the GPU's busy share between idle and maximum draw.
SIMGPU_NVML_UNSIGNED(nvmlDeviceGetPowerUsage,
                     std::min(d.desc->power_limit_w,
                              d.desc->power_idle_w + (d.desc->power_max_w - d.desc->power_idle_w) * gpu_util(d, s) / 100) *
                         1000)

extern "C" {

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type, unsigned int* clock) {
  return with_device(device, [&](const nvmlDevice_st& d, const State&) {
    if (!clock) return NVML_ERROR_INVALID_ARGUMENT;
    if (type == NVML_CLOCK_GRAPHICS || type == NVML_CLOCK_SM) *clock = d.desc->sm_mhz;
    else if (type == NVML_CLOCK_MEM) *clock = d.desc->mem_mhz;
    else if (type == NVML_CLOCK_VIDEO) *clock = kVideoClockMhz;
    else return NVML_ERROR_INVALID_ARGUMENT;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, nvmlClockType_t type, unsigned int* clock) {
  return with_device(device, [&](const nvmlDevice_st& d, const State&) {
    if (!clock) return NVML_ERROR_INVALID_ARGUMENT;
    if (type == NVML_CLOCK_GRAPHICS || type == NVML_CLOCK_SM) *clock = d.desc->sm_max_mhz;
    else if (type == NVML_CLOCK_MEM) *clock = d.desc->mem_max_mhz;
    else if (type == NVML_CLOCK_VIDEO) *clock = kVideoClockMhz;
    else return NVML_ERROR_INVALID_ARGUMENT;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetApplicationsClock(nvmlDevice_t device, nvmlClockType_t type, unsigned int* clock) {
  return with_device(device, [&](const nvmlDevice_st& d, const State&) {
    if (!clock) return NVML_ERROR_INVALID_ARGUMENT;
    if (type == NVML_CLOCK_GRAPHICS || type == NVML_CLOCK_SM) *clock = d.desc->app_sm_mhz;
    else if (type == NVML_CLOCK_MEM) *clock = d.desc->app_mem_mhz;
    else return NVML_ERROR_NOT_SUPPORTED;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetVbiosVersion(nvmlDevice_t device, char* version, unsigned int length) {
  return with_device(device, [&](const nvmlDevice_st& d, const State&) {
    return copy_string(d.desc->vbios, version, length);
  });
}

// The node's configured reasons (throttling), plus "idle" whenever no kernel
// ran during the utilization window, as a real idle GPU reports.
nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device, unsigned long long* reasons) {
  return with_device(device, [&](const nvmlDevice_st& d, const State& s) {
    if (!reasons) return NVML_ERROR_INVALID_ARGUMENT;
    *reasons = d.desc->clock_event_reasons;
    if (gpu_util(d, s) == 0) *reasons |= nvmlClocksEventReasonGpuIdle;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device, unsigned long long* reasons) {
  return nvmlDeviceGetCurrentClocksEventReasons(device, reasons);
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensor, unsigned int* temp) {
  return with_device(device, [&](const nvmlDevice_st& d, const State& s) {
    if (!temp || sensor != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
    const double span = static_cast<double>(d.desc->temp_load_c) - d.desc->temp_idle_c;
    *temp = static_cast<unsigned>(d.desc->temp_idle_c + span * gpu_util(d, s) / 100 + 0.5);
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* current, unsigned int* pending) {
  return with_device(device, [&](const nvmlDevice_st& d, const State&) {
    if (!current || !pending) return NVML_ERROR_INVALID_ARGUMENT;
    *current = *pending = d.desc->mig_mode;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, nvmlMemoryErrorType_t type, nvmlEccCounterType_t counter,
                                         unsigned long long* count) {
  return with_device(device, [&](const nvmlDevice_st& d, const State&) {
    if (!count || type > NVML_MEMORY_ERROR_TYPE_UNCORRECTED || counter > NVML_AGGREGATE_ECC)
      return NVML_ERROR_INVALID_ARGUMENT;
    *count = d.desc->ecc[counter][type];
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int count, nvmlFieldValue_t* values) {
  return with_device(device, [&](const nvmlDevice_st& d, const State& s) {
    if (count < 0 || (count > 0 && !values)) return NVML_ERROR_INVALID_ARGUMENT;
    for (int i = 0; i < count; ++i) field_value(d, s, values[i]);
    return NVML_SUCCESS;
  });
}

}  // extern "C"
