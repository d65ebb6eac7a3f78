// simgpu's NVML answers about how a GPU is split and linked: the MIG devices
// the node describes under a GPU in MIG mode, and its NVLinks (which are up,
// and their error counters), for `gpuscope doctor`'s mig and nvlink checks.
#include <algorithm>

#include "nvml_state.hpp"

using simgpu::nvml::State;
using simgpu::nvml::with_any_device;
using simgpu::nvml::with_device;

namespace {

// The link of a GPU with NVLink, or an error: a GPU without NVLink answers
// Not Supported, a link number past its links Invalid Argument.
nvmlReturn_t check_link(const nvmlDevice_st& d, unsigned link) {
  if (d.desc->nvlinks.count == 0) return NVML_ERROR_NOT_SUPPORTED;
  return link < d.desc->nvlinks.count ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int* count) {
  return with_device(device, [&](const nvmlDevice_st& d, const State&) {
    if (!count) return NVML_ERROR_INVALID_ARGUMENT;
    *count = d.desc->mig_mode ? 7u : 0u;  // seven compute slices, as on an H100/H200
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index, nvmlDevice_t* mig) {
  return with_device(device, [&](const nvmlDevice_st& d, const State& s) {
    if (!mig) return NVML_ERROR_INVALID_ARGUMENT;
    if (!d.desc->mig_mode) return NVML_ERROR_NOT_SUPPORTED;
    unsigned seen = 0;
    for (const nvmlDevice_st& m : s.mig_handles) {
      if (m.index != d.index || seen++ != index) continue;
      *mig = const_cast<nvmlDevice_t>(&m);
      return NVML_SUCCESS;
    }
    return index < 7 ? NVML_ERROR_NOT_FOUND : NVML_ERROR_INVALID_ARGUMENT;
  });
}

nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int* id) {
  return with_any_device(device, [&](const nvmlDevice_st& d, const State&) {
    if (!id) return NVML_ERROR_INVALID_ARGUMENT;
    if (!d.mig) return NVML_ERROR_NOT_SUPPORTED;
    *id = d.mig->gpu_instance;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int* id) {
  return with_any_device(device, [&](const nvmlDevice_st& d, const State&) {
    if (!id) return NVML_ERROR_INVALID_ARGUMENT;
    if (!d.mig) return NVML_ERROR_NOT_SUPPORTED;
    *id = d.mig->compute_instance;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t device, nvmlDeviceAttributes_t* a) {
  return with_any_device(device, [&](const nvmlDevice_st& d, const State&) {
    if (!a) return NVML_ERROR_INVALID_ARGUMENT;
    *a = nvmlDeviceAttributes_t{};
    if (d.mig) {
      a->multiprocessorCount = d.mig->sm_count;
      a->gpuInstanceSliceCount = d.mig->gpu_instance_slices;
      a->computeInstanceSliceCount = d.mig->compute_instance_slices;
      a->memorySizeMB = d.mig->memory_mib;
    } else {
      a->multiprocessorCount = static_cast<unsigned>(d.desc->sm_count);
      a->gpuInstanceSliceCount = a->computeInstanceSliceCount = 7;
      a->memorySizeMB = d.desc->memory_bytes >> 20;
    }
    a->sharedCopyEngineCount = 1;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link, nvmlEnableState_t* active) {
  return with_device(device, [&](const nvmlDevice_st& d, const State&) {
    if (!active) return NVML_ERROR_INVALID_ARGUMENT;
    if (const nvmlReturn_t r = check_link(d, link); r != NVML_SUCCESS) return r;
    const auto& down = d.desc->nvlinks.down;
    *active = std::find(down.begin(), down.end(), link) == down.end() ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t device, unsigned int link, nvmlNvLinkErrorCounter_t counter,
                                             unsigned long long* value) {
  return with_device(device, [&](const nvmlDevice_st& d, const State&) {
    if (!value || counter > NVML_NVLINK_ERROR_DL_CRC_FLIT) return NVML_ERROR_INVALID_ARGUMENT;
    if (const nvmlReturn_t r = check_link(d, link); r != NVML_SUCCESS) return r;
    const auto it = d.desc->nvlinks.errors.find(link);
    *value = it == d.desc->nvlinks.errors.end() ? 0 : it->second[counter];
    return NVML_SUCCESS;
  });
}

}  // extern "C"
