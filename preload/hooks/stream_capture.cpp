// Is this stream capturing into a CUDA graph? Asked by launch, copy and
// memset hooks only while some capture is open (registry/open_captures.h),
// through the API the call came from: a runtime stream to the runtime, a
// driver stream to the driver (the real functions, never our wrappers).
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "call_info.h"
#include "graph_calls.h"

namespace gpuscope::hooks {
namespace slots {
extern HookSlot cudaStreamIsCapturing;  // hooks/runtime_graphs.cpp
extern HookSlot cuStreamIsCapturing;    // driver/driver_graphs.cpp
}  // namespace slots

bool stream_is_capturing(uint64_t stream, uint8_t flags) noexcept {
  const uint64_t key = capture_stream_key(reinterpret_cast<const void*>(stream), flags);
  // The legacy default stream (0, or cudaStreamLegacy) never captures.
  if (key == 0 || key == reinterpret_cast<uint64_t>(cudaStreamLegacy)) return false;
  capture::InternalScope internal;
  if ((flags & kDriverApi) != 0) {
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    return call_real<decltype(&::cuStreamIsCapturing)>(slots::cuStreamIsCapturing, 1,
                                                       reinterpret_cast<CUstream>(key), &status) == 0 &&
           status != CU_STREAM_CAPTURE_STATUS_NONE;
  }
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  return call_real<decltype(&::cudaStreamIsCapturing)>(slots::cudaStreamIsCapturing, 1,
                                                       reinterpret_cast<cudaStream_t>(key), &status) == 0 &&
         status != cudaStreamCaptureStatusNone;
}

}  // namespace gpuscope::hooks
