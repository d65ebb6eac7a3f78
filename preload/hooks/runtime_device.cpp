// CUDA runtime initialization, device selection, versions, profiler range
// markers, and stream/event lifecycle. cudaGetDeviceCount's result is the
// first evidence of a process that never reached the GPU (35: no driver,
// 34: stub driver, 100: no device).
#include <cuda_runtime_api.h>

#include "call_info.h"
#include "hook_support.h"

namespace {

using gpuscope::hooks::CallInfo;
using gpuscope::hooks::plain;
constexpr uint8_t P = gpuscope::hooks::kPerThreadStream;

// cudaSetDevice: remember the device for this thread's later records.
struct SetDeviceCall : CallInfo {
  static constexpr bool kNestedSideEffects = true;
  int device = 0;
  void after(gpuscope::capture::ApiCallScope& s, int32_t result, uint8_t flags) {
    if (result == 0) gpuscope::hooks::set_current_device(device);
    finish(s, result, flags);
  }
};

SetDeviceCall set_device(int device) {
  SetDeviceCall c;
  c.device = device;
  return c;
}

// Stream creation: the new handle goes into the ApiCall's stream, flagged
// when non-blocking, so the analyzer knows which streams the legacy default
// stream does not wait for (implicit synchronization).
struct StreamCreateCall : CallInfo {
  cudaStream_t* out = nullptr;
  bool nonblocking = false;
  void after(gpuscope::capture::ApiCallScope& s, int32_t result, uint8_t flags) {
    if (result == 0 && out != nullptr) stream = gpuscope::hooks::stream_id(*out);
    finish(s, result, nonblocking ? flags | gpuscope::container::kCallNonBlockingStream : flags);
  }
};

StreamCreateCall stream_create(cudaStream_t* out, unsigned flags) {
  StreamCreateCall c;
  c.out = out;
  c.nonblocking = (flags & cudaStreamNonBlocking) != 0;
  return c;
}

}  // namespace

#define GPUSCOPE_RUNTIME_DEVICE(X)                                                                              \
  X(cudaError_t, cudaGetDeviceCount, 0, (int* n), (n), (gpuscope::hooks::availability_query()))                 \
  X(cudaError_t, cudaSetDevice, 0, (int d), (d), (set_device(d)))                                               \
  X(cudaError_t, cudaGetDevice, 0, (int* d), (d), (plain()))                                                    \
  X(cudaError_t, cudaDriverGetVersion, 0, (int* v), (v), (plain()))                                             \
  X(cudaError_t, cudaRuntimeGetVersion, 0, (int* v), (v), (plain()))                                            \
  X(cudaError_t, cudaDeviceReset, 0, (), (), (plain()))                                                         \
  X(cudaError_t, cudaProfilerStart, 0, (), (), (gpuscope::hooks::ProfilerStartCall{}))                          \
  X(cudaError_t, cudaProfilerStop, 0, (), (), (gpuscope::hooks::ProfilerStopCall{}))                            \
  X(cudaError_t, cudaStreamCreate, 0, (cudaStream_t* s), (s), (stream_create(s, 0)))                           \
  X(cudaError_t, cudaStreamCreateWithFlags, 0, (cudaStream_t* s, unsigned f), (s, f), (stream_create(s, f)))    \
  X(cudaError_t, cudaStreamCreateWithPriority, 0, (cudaStream_t* s, unsigned f, int p), (s, f, p),              \
    (stream_create(s, f)))                                                                                      \
  X(cudaError_t, cudaStreamDestroy, 0, (cudaStream_t s), (s), (plain(s)))                                       \
  X(cudaError_t, cudaEventCreate, 0, (cudaEvent_t* e), (e), (plain()))                                          \
  X(cudaError_t, cudaEventCreateWithFlags, 0, (cudaEvent_t* e, unsigned f), (e, f), (plain()))                  \
  X(cudaError_t, cudaEventRecord, 0, (cudaEvent_t e, cudaStream_t s), (e, s), (plain(s)))                       \
  X(cudaError_t, cudaEventRecord_ptsz, P, (cudaEvent_t e, cudaStream_t s), (e, s), (plain(s)))                  \
  X(cudaError_t, cudaEventRecordWithFlags, 0, (cudaEvent_t e, cudaStream_t s, unsigned f), (e, s, f), (plain(s)))\
  X(cudaError_t, cudaEventRecordWithFlags_ptsz, P, (cudaEvent_t e, cudaStream_t s, unsigned f), (e, s, f),       \
    (plain(s)))                                                                                                 \
  X(cudaError_t, cudaEventDestroy, 0, (cudaEvent_t e), (e), (plain()))

GPUSCOPE_DEFINE_RUNTIME_FAMILY(GPUSCOPE_RUNTIME_DEVICE, runtime_device_hooks)
