// State shared by simgpu's NVML entry points: the node's devices and the
// cross-process activity log their utilization is derived from.
#pragma once

#include <ctime>
#include <utility>
#include <vector>

#include "../common/node.hpp"
#include "../common/shared_state.hpp"
#include "nvml_types.hpp"

struct nvmlDevice_st {
  unsigned index;  // NVML index == node index: NVML ignores CUDA_VISIBLE_DEVICES
  const simgpu::DeviceDesc* desc;
  const simgpu::MigDevice* mig = nullptr;  // a MIG device handle: one of desc's MIG devices
};

namespace simgpu::nvml {

struct State {
  const NodeDesc* node = nullptr;
  SharedState* shared = nullptr;
  std::vector<nvmlDevice_st> devices;
  std::vector<nvmlDevice_st> mig_handles;  // every device's MIG devices, in order; index = the parent's
};

// NVML's timestamps: CPU time in microseconds on CLOCK_REALTIME.
inline long long realtime_us() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<long long>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

// nullptr unless NVML is initialized (nvmlInit without a matching shutdown).
const State* state();

// Runs f(device, state) for a valid handle of an initialized NVML.
template <class F>
nvmlReturn_t with_device(nvmlDevice_t device, F&& f) {
  const State* s = state();
  if (!s) return NVML_ERROR_UNINITIALIZED;
  if (!device || device->index >= s->devices.size() || &s->devices[device->index] != device)
    return NVML_ERROR_INVALID_ARGUMENT;
  return f(*device, *s);
}

// The same for a handle that may also be a MIG device's (name, UUID and
// attributes answer for both; most queries only for a whole GPU).
template <class F>
nvmlReturn_t with_any_device(nvmlDevice_t device, F&& f) {
  const State* s = state();
  if (!s) return NVML_ERROR_UNINITIALIZED;
  for (const nvmlDevice_st& m : s->mig_handles)
    if (&m == device) return f(*device, *s);
  return with_device(device, std::forward<F>(f));
}

}  // namespace simgpu::nvml
