// simgpu's NVML answers about the device's health, as the node describes it:
// persistence mode, ECC mode, row remapping and page retirement (what
// `gpuscope doctor` checks; samples/README.md, Node descriptions).
#include "nvml_state.hpp"

using simgpu::nvml::State;
using simgpu::nvml::with_device;

namespace {

nvmlEnableState_t enable_state(bool on) { return on ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED; }

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

}  // extern "C"
