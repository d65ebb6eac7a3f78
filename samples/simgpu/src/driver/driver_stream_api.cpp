// Driver API entry points that put host work into streams: stream callbacks
// and host functions.
#include "driver_api.hpp"

using simgpu::drv::Model;
using simgpu::drv::with_model;

namespace {

template <bool PT>
CUresult cuStreamAddCallback_impl(CUstream s, CUstreamCallback callback, void* user_data, unsigned flags) {
  if (!callback || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  // The callback is told the stream as the caller named it (NULL stays NULL).
  return with_model([&](Model& m) {
    return m.host_function(s, PT, [callback, s, user_data] { callback(s, CUDA_SUCCESS, user_data); });
  });
}

template <bool PT>
CUresult cuLaunchHostFunc_impl(CUstream s, CUhostFn fn, void* user_data) {
  if (!fn) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) { return m.host_function(s, PT, [fn, user_data] { fn(user_data); }); });
}

}  // namespace

SIMGPU_DRIVER_DUAL(cuStreamAddCallback, _ptsz, (CUstream s, CUstreamCallback callback, void* user_data, unsigned int flags),
                   (s, callback, user_data, flags))
SIMGPU_DRIVER_DUAL(cuLaunchHostFunc, _ptsz, (CUstream s, CUhostFn fn, void* user_data), (s, fn, user_data))
