// simgpu-smi: a tiny nvidia-smi over whatever libnvidia-ml.so.1 the loader
// finds -- simgpu's (LD_LIBRARY_PATH=<build>/simgpu/lib) or a real driver's.
//   simgpu-smi                      one block per device
//   simgpu-smi --query FIELD [-i N] one number, for scripts and tests; FIELD is
//       utilization.gpu, utilization.memory, memory.used (MiB), pcie.rx (KB/s),
//       pcie.tx (KB/s), power.draw (W), temperature.gpu, clocks.sm (MHz)
// NVML is loaded with dlopen, as gpuscope does, so no NVML header or stub is
// needed to build it.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>

#include "../src/nvml/nvml_types.hpp"

namespace {

struct Nvml {
#define SIMGPU_SMI_FN(name, ...) nvmlReturn_t (*name)(__VA_ARGS__) = nullptr;
  SIMGPU_SMI_FN(nvmlInit_v2, void)
  SIMGPU_SMI_FN(nvmlDeviceGetCount_v2, unsigned*)
  SIMGPU_SMI_FN(nvmlDeviceGetHandleByIndex_v2, unsigned, nvmlDevice_t*)
  SIMGPU_SMI_FN(nvmlDeviceGetName, nvmlDevice_t, char*, unsigned)
  SIMGPU_SMI_FN(nvmlDeviceGetPciInfo_v3, nvmlDevice_t, nvmlPciInfo_t*)
  SIMGPU_SMI_FN(nvmlDeviceGetUtilizationRates, nvmlDevice_t, nvmlUtilization_t*)
  SIMGPU_SMI_FN(nvmlDeviceGetMemoryInfo, nvmlDevice_t, nvmlMemory_t*)
  SIMGPU_SMI_FN(nvmlDeviceGetPcieThroughput, nvmlDevice_t, nvmlPcieUtilCounter_t, unsigned*)
  SIMGPU_SMI_FN(nvmlDeviceGetCurrPcieLinkGeneration, nvmlDevice_t, unsigned*)
  SIMGPU_SMI_FN(nvmlDeviceGetCurrPcieLinkWidth, nvmlDevice_t, unsigned*)
  SIMGPU_SMI_FN(nvmlDeviceGetMaxPcieLinkGeneration, nvmlDevice_t, unsigned*)
  SIMGPU_SMI_FN(nvmlDeviceGetMaxPcieLinkWidth, nvmlDevice_t, unsigned*)
  SIMGPU_SMI_FN(nvmlDeviceGetPowerUsage, nvmlDevice_t, unsigned*)
  SIMGPU_SMI_FN(nvmlDeviceGetTemperature, nvmlDevice_t, nvmlTemperatureSensors_t, unsigned*)
  SIMGPU_SMI_FN(nvmlDeviceGetClockInfo, nvmlDevice_t, nvmlClockType_t, unsigned*)
  SIMGPU_SMI_FN(nvmlDeviceGetCurrentClocksEventReasons, nvmlDevice_t, unsigned long long*)
  SIMGPU_SMI_FN(nvmlDeviceGetComputeRunningProcesses_v3, nvmlDevice_t, unsigned*, nvmlProcessInfo_t*)
  SIMGPU_SMI_FN(nvmlSystemGetDriverVersion, char*, unsigned)
#undef SIMGPU_SMI_FN
};

bool load(Nvml& n) {
  void* h = dlopen("libnvidia-ml.so.1", RTLD_NOW);
  if (!h) return false;
  bool ok = true;
  auto bind = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, name));
    ok = ok && fn;
  };
#define SIMGPU_SMI_BIND(name) bind(n.name, #name);
  SIMGPU_SMI_BIND(nvmlInit_v2) SIMGPU_SMI_BIND(nvmlDeviceGetCount_v2) SIMGPU_SMI_BIND(nvmlDeviceGetHandleByIndex_v2)
  SIMGPU_SMI_BIND(nvmlDeviceGetName) SIMGPU_SMI_BIND(nvmlDeviceGetPciInfo_v3)
  SIMGPU_SMI_BIND(nvmlDeviceGetUtilizationRates) SIMGPU_SMI_BIND(nvmlDeviceGetMemoryInfo)
  SIMGPU_SMI_BIND(nvmlDeviceGetPcieThroughput) SIMGPU_SMI_BIND(nvmlDeviceGetCurrPcieLinkGeneration)
  SIMGPU_SMI_BIND(nvmlDeviceGetCurrPcieLinkWidth) SIMGPU_SMI_BIND(nvmlDeviceGetMaxPcieLinkGeneration)
  SIMGPU_SMI_BIND(nvmlDeviceGetMaxPcieLinkWidth) SIMGPU_SMI_BIND(nvmlDeviceGetPowerUsage)
  SIMGPU_SMI_BIND(nvmlDeviceGetTemperature) SIMGPU_SMI_BIND(nvmlDeviceGetClockInfo)
  SIMGPU_SMI_BIND(nvmlDeviceGetCurrentClocksEventReasons) SIMGPU_SMI_BIND(nvmlDeviceGetComputeRunningProcesses_v3)
  SIMGPU_SMI_BIND(nvmlSystemGetDriverVersion)
#undef SIMGPU_SMI_BIND
  return ok;
}

// One numeric field; false if the name is unknown or NVML refused.
bool query(const Nvml& n, nvmlDevice_t d, const std::string& field, double* out) {
  nvmlUtilization_t u{};
  nvmlMemory_t m{};
  unsigned v = 0;
  bool ok = true;
  if (field == "utilization.gpu" || field == "utilization.memory") {
    ok = n.nvmlDeviceGetUtilizationRates(d, &u) == NVML_SUCCESS;
    *out = field == "utilization.gpu" ? u.gpu : u.memory;
  } else if (field == "memory.used") {
    ok = n.nvmlDeviceGetMemoryInfo(d, &m) == NVML_SUCCESS;
    *out = static_cast<double>(m.used >> 20);
  } else if (field == "pcie.rx" || field == "pcie.tx") {
    ok = n.nvmlDeviceGetPcieThroughput(d, field == "pcie.rx" ? NVML_PCIE_UTIL_RX_BYTES : NVML_PCIE_UTIL_TX_BYTES, &v) ==
         NVML_SUCCESS;
    *out = v;
  } else if (field == "power.draw") {
    ok = n.nvmlDeviceGetPowerUsage(d, &v) == NVML_SUCCESS;
    *out = v / 1000.0;
  } else if (field == "temperature.gpu") {
    ok = n.nvmlDeviceGetTemperature(d, NVML_TEMPERATURE_GPU, &v) == NVML_SUCCESS;
    *out = v;
  } else if (field == "clocks.sm") {
    ok = n.nvmlDeviceGetClockInfo(d, NVML_CLOCK_SM, &v) == NVML_SUCCESS;
    *out = v;
  } else {
    return false;
  }
  return ok;
}

void show(const Nvml& n, unsigned index, nvmlDevice_t d) {
  char name[96] = "?";
  nvmlPciInfo_t pci{};
  unsigned gen = 0, width = 0, max_gen = 0, max_width = 0, procs = 0;
  unsigned long long reasons = 0;
  n.nvmlDeviceGetName(d, name, sizeof name);
  n.nvmlDeviceGetPciInfo_v3(d, &pci);
  n.nvmlDeviceGetCurrPcieLinkGeneration(d, &gen);
  n.nvmlDeviceGetCurrPcieLinkWidth(d, &width);
  n.nvmlDeviceGetMaxPcieLinkGeneration(d, &max_gen);
  n.nvmlDeviceGetMaxPcieLinkWidth(d, &max_width);
  n.nvmlDeviceGetCurrentClocksEventReasons(d, &reasons);
  n.nvmlDeviceGetComputeRunningProcesses_v3(d, &procs, nullptr);
  double util = 0, mem_util = 0, used = 0, power = 0, temp = 0, sm = 0;
  query(n, d, "utilization.gpu", &util);
  query(n, d, "utilization.memory", &mem_util);
  query(n, d, "memory.used", &used);
  query(n, d, "power.draw", &power);
  query(n, d, "temperature.gpu", &temp);
  query(n, d, "clocks.sm", &sm);
  std::printf("GPU %u: %s  bus %s\n", index, name, pci.busId);
  std::printf("  util %3.0f%%  mem util %3.0f%%  mem used %.0f MiB  power %.0f W  temp %.0f C  SM clock %.0f MHz\n",
              util, mem_util, used, power, temp, sm);
  std::printf("  PCIe Gen%u x%u (max Gen%u x%u)  clock event reasons 0x%llx  compute processes %u\n", gen, width,
              max_gen, max_width, reasons, procs);
}

}  // namespace

int main(int argc, char** argv) {
  std::string field;
  unsigned index = 0;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--query") && i + 1 < argc) field = argv[++i];
    else if (!std::strcmp(argv[i], "-i") && i + 1 < argc) index = static_cast<unsigned>(std::atoi(argv[++i]));
    else {
      std::fprintf(stderr, "usage: simgpu-smi [--query FIELD [-i INDEX]]\n");
      return 2;
    }
  }
  Nvml n;
  if (!load(n) || n.nvmlInit_v2() != NVML_SUCCESS) {
    std::fprintf(stderr, "simgpu-smi: cannot load or initialize libnvidia-ml.so.1\n");
    return 1;
  }
  unsigned count = 0;
  n.nvmlDeviceGetCount_v2(&count);
  if (!field.empty()) {
    nvmlDevice_t d = nullptr;
    double value = 0;
    if (n.nvmlDeviceGetHandleByIndex_v2(index, &d) != NVML_SUCCESS || !query(n, d, field, &value)) return 1;
    std::printf("%g\n", value);
    return 0;
  }
  char driver[80] = "?";
  n.nvmlSystemGetDriverVersion(driver, sizeof driver);
  std::printf("driver %s, %u device(s)\n", driver, count);
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t d = nullptr;
    if (n.nvmlDeviceGetHandleByIndex_v2(i, &d) == NVML_SUCCESS) show(n, i, d);
  }
  return 0;
}
