// Runtime entry points for streams and events.  cudaStream_t and cudaEvent_t
// are the driver's CUstream and CUevent, so handles pass straight through.
#include <memory>

#include "runtime.hpp"

using simgpu::rt::DriverTable;
using simgpu::rt::from_driver;
using simgpu::rt::with_driver;

namespace {

template <bool PT>
cudaError_t cudaStreamQuery_impl(cudaStream_t s) {
  return with_driver(PT, [&](const DriverTable& d) { return from_driver(d.cuStreamQuery(s)); });
}

template <bool PT>
cudaError_t cudaStreamSynchronize_impl(cudaStream_t s) {
  return with_driver(PT, [&](const DriverTable& d) { return from_driver(d.cuStreamSynchronize(s)); });
}

template <bool PT>
cudaError_t cudaStreamWaitEvent_impl(cudaStream_t s, cudaEvent_t e, unsigned flags) {
  return with_driver(PT, [&](const DriverTable& d) { return from_driver(d.cuStreamWaitEvent(s, e, flags)); });
}

template <bool PT>
cudaError_t cudaStreamGetFlags_impl(cudaStream_t s, unsigned* flags) {
  return with_driver(PT, [&](const DriverTable& d) { return from_driver(d.cuStreamGetFlags(s, flags)); });
}

template <bool PT>
cudaError_t cudaStreamGetPriority_impl(cudaStream_t s, int* priority) {
  return with_driver(PT, [&](const DriverTable& d) { return from_driver(d.cuStreamGetPriority(s, priority)); });
}

// cudaStreamAddCallback's callback takes a cudaError_t where the driver's
// takes a CUresult: the driver calls this trampoline, which owns the pair.
struct RuntimeCallback {
  cudaStreamCallback_t fn;
  void* user_data;
};

void CUDA_CB runtime_callback(CUstream s, CUresult status, void* data) {
  const std::unique_ptr<RuntimeCallback> cb(static_cast<RuntimeCallback*>(data));
  cb->fn(s, from_driver(status), cb->user_data);
}

template <bool PT>
cudaError_t cudaStreamAddCallback_impl(cudaStream_t s, cudaStreamCallback_t fn, void* user_data, unsigned flags) {
  return with_driver(PT, [&](const DriverTable& d) -> cudaError_t {
    if (!fn) return cudaErrorInvalidValue;
    auto cb = std::make_unique<RuntimeCallback>(RuntimeCallback{fn, user_data});
    const cudaError_t e = from_driver(d.cuStreamAddCallback(s, runtime_callback, cb.get(), flags));
    if (e == cudaSuccess) cb.release();  // the trampoline frees it
    return e;
  });
}

template <bool PT>
cudaError_t cudaLaunchHostFunc_impl(cudaStream_t s, cudaHostFn_t fn, void* user_data) {
  return with_driver(PT, [&](const DriverTable& d) { return from_driver(d.cuLaunchHostFunc(s, fn, user_data)); });
}

template <bool PT>
cudaError_t cudaStreamGetId_impl(cudaStream_t s, unsigned long long* id) {
  return with_driver(PT, [&](const DriverTable& d) { return from_driver(d.cuStreamGetId(s, id)); });
}

template <bool PT>
cudaError_t cudaStreamGetDevice_impl(cudaStream_t s, int* device) {
  return with_driver(PT, [&](const DriverTable& d) { return from_driver(d.cuStreamGetDevice(s, device)); });
}

template <bool PT>
cudaError_t cudaEventRecord_impl(cudaEvent_t e, cudaStream_t s) {
  return with_driver(PT, [&](const DriverTable& d) { return from_driver(d.cuEventRecord(e, s)); });
}

template <bool PT>
cudaError_t cudaEventRecordWithFlags_impl(cudaEvent_t e, cudaStream_t s, unsigned flags) {
  return with_driver(PT, [&](const DriverTable& d) { return from_driver(d.cuEventRecordWithFlags(e, s, flags)); });
}

}  // namespace

extern "C" {

cudaError_t CUDARTAPI cudaStreamCreate(cudaStream_t* s) {
  return with_driver(false, [&](const DriverTable& d) { return from_driver(d.cuStreamCreate(s, CU_STREAM_DEFAULT)); });
}

// cudaStreamNonBlocking == CU_STREAM_NON_BLOCKING.
cudaError_t CUDARTAPI cudaStreamCreateWithFlags(cudaStream_t* s, unsigned int flags) {
  return with_driver(false, [&](const DriverTable& d) { return from_driver(d.cuStreamCreate(s, flags)); });
}

cudaError_t CUDARTAPI cudaStreamCreateWithPriority(cudaStream_t* s, unsigned int flags, int priority) {
  return with_driver(false, [&](const DriverTable& d) {
    return from_driver(d.cuStreamCreateWithPriority(s, flags, priority));
  });
}

cudaError_t CUDARTAPI cudaStreamDestroy(cudaStream_t s) {
  return with_driver(false, [&](const DriverTable& d) { return from_driver(d.cuStreamDestroy(s)); });
}

cudaError_t CUDARTAPI cudaEventCreate(cudaEvent_t* e) {
  return with_driver(false, [&](const DriverTable& d) { return from_driver(d.cuEventCreate(e, CU_EVENT_DEFAULT)); });
}

// cudaEventBlockingSync/DisableTiming/Interprocess == the CU_EVENT_* flags.
cudaError_t CUDARTAPI cudaEventCreateWithFlags(cudaEvent_t* e, unsigned int flags) {
  return with_driver(false, [&](const DriverTable& d) { return from_driver(d.cuEventCreate(e, flags)); });
}

cudaError_t CUDARTAPI cudaEventDestroy(cudaEvent_t e) {
  return with_driver(false, [&](const DriverTable& d) { return from_driver(d.cuEventDestroy(e)); });
}

cudaError_t CUDARTAPI cudaEventQuery(cudaEvent_t e) {
  return with_driver(false, [&](const DriverTable& d) { return from_driver(d.cuEventQuery(e)); });
}

cudaError_t CUDARTAPI cudaEventSynchronize(cudaEvent_t e) {
  return with_driver(false, [&](const DriverTable& d) { return from_driver(d.cuEventSynchronize(e)); });
}

cudaError_t CUDARTAPI cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  return with_driver(false, [&](const DriverTable& d) { return from_driver(d.cuEventElapsedTime(ms, start, end)); });
}

}  // extern "C"

SIMGPU_RUNTIME_DUAL(cudaStreamQuery, _ptsz, (cudaStream_t s), (s))
SIMGPU_RUNTIME_DUAL(cudaStreamSynchronize, _ptsz, (cudaStream_t s), (s))
SIMGPU_RUNTIME_DUAL(cudaStreamWaitEvent, _ptsz, (cudaStream_t s, cudaEvent_t e, unsigned int flags), (s, e, flags))
SIMGPU_RUNTIME_DUAL(cudaStreamGetFlags, _ptsz, (cudaStream_t s, unsigned int* flags), (s, flags))
SIMGPU_RUNTIME_DUAL(cudaStreamGetPriority, _ptsz, (cudaStream_t s, int* priority), (s, priority))
SIMGPU_RUNTIME_DUAL(cudaEventRecord, _ptsz, (cudaEvent_t e, cudaStream_t s), (e, s))
SIMGPU_RUNTIME_DUAL(cudaEventRecordWithFlags, _ptsz, (cudaEvent_t e, cudaStream_t s, unsigned int flags),
                    (e, s, flags))
SIMGPU_RUNTIME_DUAL(cudaStreamAddCallback, _ptsz,
                    (cudaStream_t s, cudaStreamCallback_t fn, void* user_data, unsigned int flags),
                    (s, fn, user_data, flags))
SIMGPU_RUNTIME_DUAL(cudaLaunchHostFunc, _ptsz, (cudaStream_t s, cudaHostFn_t fn, void* user_data), (s, fn, user_data))
SIMGPU_RUNTIME_DUAL(cudaStreamGetId, _ptsz, (cudaStream_t s, unsigned long long* id), (s, id))
SIMGPU_RUNTIME_DUAL(cudaStreamGetDevice, _ptsz, (cudaStream_t s, int* device), (s, device))
