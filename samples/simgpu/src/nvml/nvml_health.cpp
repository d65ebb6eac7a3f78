// simgpu's NVML answers about the device's health, as the node describes it:
// persistence mode, ECC mode, row remapping and page retirement (what
// `gpuscope doctor` checks; samples/README.md, Node descriptions).
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "nvml_state.hpp"

using simgpu::nvml::State;
using simgpu::nvml::with_device;

namespace {

nvmlEnableState_t enable_state(bool on) { return on ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED; }

constexpr unsigned kBitsPerWord = 8 * sizeof(unsigned long);

// Sets the bits of a list ("0-63,128-191": CPUs, or NUMA nodes) that fit in `words` words;
// an empty list means every CPU the machine has.
void set_listed_bits(const std::string& list, unsigned words, unsigned long* mask) {
  const auto set = [&](unsigned long cpu) {
    if (cpu < static_cast<unsigned long>(words) * kBitsPerWord) mask[cpu / kBitsPerWord] |= 1ul << (cpu % kBitsPerWord);
  };
  if (list.empty()) {
    const long cpus = sysconf(_SC_NPROCESSORS_CONF);
    for (long cpu = 0; cpu < cpus; ++cpu) set(static_cast<unsigned long>(cpu));
    return;
  }
  const char* p = list.c_str();
  while (*p != '\0') {
    char* end = nullptr;
    const unsigned long first = std::strtoul(p, &end, 10);
    unsigned long last = first;
    if (*end == '-') last = std::strtoul(end + 1, &end, 10);
    for (unsigned long cpu = first; cpu <= last && cpu < first + 65536; ++cpu) set(cpu);
    p = *end == ',' ? end + 1 : end;
    if (end == p && *p != '\0') break;  // not a CPU list: stop rather than loop
  }
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device, nvmlEnableState_t* mode) {
  return with_device(device, [&](const nvmlDevice_st& d, const State&) {
    if (!mode) return NVML_ERROR_INVALID_ARGUMENT;
    *mode = enable_state(d.desc->persistence_mode != 0);
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t device, nvmlEnableState_t* current, nvmlEnableState_t* pending) {
  return with_device(device, [&](const nvmlDevice_st& d, const State&) {
    if (!current || !pending) return NVML_ERROR_INVALID_ARGUMENT;
    *current = enable_state(d.desc->ecc_mode != 0);
    *pending = enable_state(d.desc->ecc_pending_mode != 0);
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int* corrected, unsigned int* uncorrected,
                                       unsigned int* pending, unsigned int* failure) {
  return with_device(device, [&](const nvmlDevice_st& d, const State&) {
    if (!corrected || !uncorrected || !pending || !failure) return NVML_ERROR_INVALID_ARGUMENT;
    const simgpu::RemappedRows& rows = d.desc->remapped_rows;
    *corrected = rows.correctable;
    *uncorrected = rows.uncorrectable;
    *pending = rows.pending ? 1 : 0;
    *failure = rows.failure ? 1 : 0;
    return NVML_SUCCESS;
  });
}

// A device that remaps rows retires no pages; its pending state is the remap's.
nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device, nvmlEnableState_t* pending) {
  return with_device(device, [&](const nvmlDevice_st& d, const State&) {
    if (!pending) return NVML_ERROR_INVALID_ARGUMENT;
    *pending = enable_state(d.desc->remapped_rows.pending);
    return NVML_SUCCESS;
  });
}

// The CPUs near the GPU, as a bit mask of cpuSetSize unsigned longs.
nvmlReturn_t nvmlDeviceGetCpuAffinity(nvmlDevice_t device, unsigned int cpuSetSize, unsigned long* cpuSet) {
  return with_device(device, [&](const nvmlDevice_st& d, const State&) {
    if (!d.desc->numa_affinity) return NVML_ERROR_NOT_SUPPORTED;
    if (!cpuSet || cpuSetSize == 0) return NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned i = 0; i < cpuSetSize; ++i) cpuSet[i] = 0;
    set_listed_bits(d.desc->local_cpus, cpuSetSize, cpuSet);
    return NVML_SUCCESS;
  });
}

// The NUMA nodes near the GPU (scope 0, NVML_AFFINITY_SCOPE_NODE; 1, the
// socket, answers the same here), as a bit mask of nodeSetSize unsigned longs.
// nvmlDeviceGetNumaNodeId is not modeled: it answers only where the GPU's
// own memory is a NUMA node (coherent platforms), not on a PCIe H200.
nvmlReturn_t nvmlDeviceGetMemoryAffinity(nvmlDevice_t device, unsigned int nodeSetSize, unsigned long* nodeSet,
                                         unsigned int scope) {
  return with_device(device, [&](const nvmlDevice_st& d, const State&) {
    if (!d.desc->numa_affinity) return NVML_ERROR_NOT_SUPPORTED;
    if (!nodeSet || nodeSetSize == 0 || scope > 1) return NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned i = 0; i < nodeSetSize; ++i) nodeSet[i] = 0;
    set_listed_bits(std::to_string(d.desc->numa_node), nodeSetSize, nodeSet);
    return NVML_SUCCESS;
  });
}

}  // extern "C"
