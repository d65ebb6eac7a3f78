// What an outermost CUDA call is, from its name alone: its kind of host
// time (trace_model.h) and whether it needs a CUDA context (call_sequence.h).
#include "call_sequence.h"
#include "function_names.h"
#include "trace_model.h"

namespace gpuscope::analyzer {

const char* call_kind_name(CallKind kind) {
  static constexpr const char* kNames[kCallKinds] = {"synchronization", "copies", "memsets", "allocation",
                                                     "freeing", "launches", "initialization", "other CUDA calls"};
  return kNames[static_cast<size_t>(kind)];
}

CallKind classify_function(const std::string& name) {
  const std::string_view n = name;
  if (starts_with_any(n, {"cudaMemcpy", "cuMemcpy"})) return CallKind::Copy;
  if (starts_with_any(n, {"cudaMemset", "cuMemsetD"})) return CallKind::Memset;
  // Virtual memory management (cuMemCreate, cuMemMap, ...) is how
  // PyTorch's expandable segments allocate and free.
  if (starts_with_any(n, {"cudaFree", "cuMemFree", "cudaHostUnregister", "cuMemHostUnregister", "cuMemRelease",
                          "cuMemUnmap", "cuMemAddressFree"}))
    return CallKind::Free;
  if (starts_with_any(n, {"cudaMalloc", "cudaHostAlloc", "cudaHostRegister", "cuMemAlloc", "cuMemHostAlloc",
                          "cuMemHostRegister", "cuMemCreate", "cuMemMap", "cuMemSetAccess", "cuMemAddressReserve"}))
    return CallKind::Alloc;
  if (starts_with_any(n, {"cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize",
                          "cudaStreamWaitEvent", "cudaStreamQuery", "cudaEventQuery", "cuCtxSynchronize",
                          "cuStreamSynchronize", "cuEventSynchronize", "cuStreamWaitEvent", "cuStreamQuery",
                          "cuEventQuery"}))
    return CallKind::Sync;
  // Host functions run on a CPU thread in stream order: no kernel.
  if (starts_with_any(n, {"cudaLaunchHostFunc", "cuLaunchHostFunc"})) return CallKind::Other;
  if (starts_with_any(n, {"__cudaLaunchKernel", "cudaLaunch", "cuLaunch", "cudaGraphLaunch", "cuGraphLaunch"}))
    return CallKind::Launch;
  if (starts_with_any(n, {"cudaGetDeviceCount", "cudaSetDevice", "cudaDriverGetVersion", "cudaRuntimeGetVersion",
                          "cuInit", "cuDeviceGetCount", "cudaDeviceReset"}))
    return CallKind::Init;
  return CallKind::Other;
}

bool is_query_without_context(std::string_view f) {
  return starts_with_any(f, {"cudaGetDevice", "cudaDeviceGetAttribute", "cudaGetErrorName", "cudaGetErrorString",
                             "cudaGetLastError", "cudaPeekAtLastError", "cudaDriverGetVersion",
                             "cudaRuntimeGetVersion", "cudaGetDriverEntryPoint", "cudaDeviceCanAccessPeer",
                             "cuDeviceGet", "cuDriverGetVersion", "cuGetErrorName", "cuGetErrorString",
                             "cuGetProcAddress", "cuDeviceCanAccessPeer", "cuDeviceComputeCapability",
                             "cuDeviceTotalMem"});
}

}  // namespace gpuscope::analyzer
