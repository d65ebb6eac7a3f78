// simgpu's libcudart.so.13: internal interface shared by its source files.
//
// The runtime implements every cuda* call on top of the driver API, reached
// exactly as the real runtime reaches it: dlopen("libcuda.so.1"), one dlsym
// for "cuGetProcAddress_v2", then cuGetProcAddress for every driver function
// by base name and CUDA version, once with the default flags and once asking
// for the per-thread default stream variants (used by the _ptsz/_ptds entry
// points).  A profiler that wraps cuGetProcAddress therefore sees every
// driver call this runtime makes.
#pragma once

#include <cuda.h>
#include <cudaProfilerTypedefs.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include <new>

namespace simgpu::rt {

// Driver functions the runtime uses, with the version of the PFN typedef that
// matches what cuGetProcAddress returns for CUDART_VERSION (13000).
#define SIMGPU_RT_DRIVER_FUNCTIONS(X)                                                          \
  X(cuInit, 2000) X(cuDriverGetVersion, 2020) X(cuDeviceGet, 2000) X(cuDeviceGetCount, 2000)    \
  X(cuDeviceGetName, 2000) X(cuDeviceGetAttribute, 2000) X(cuDeviceTotalMem, 3020)               \
  X(cuDeviceGetUuid, 11040) X(cuDeviceGetPCIBusId, 4010) X(cuDeviceGetByPCIBusId, 4010)          \
  X(cuDevicePrimaryCtxRetain, 7000) X(cuDevicePrimaryCtxGetState, 7000)                          \
  X(cuDevicePrimaryCtxSetFlags, 11000) X(cuCtxSetCurrent, 4000) X(cuCtxSynchronize, 13000)       \
  X(cuCtxGetStreamPriorityRange, 5050) X(cuMemAlloc, 3020) X(cuMemFree, 3020)                    \
  X(cuMemAllocHost, 3020) X(cuMemFreeHost, 2000) X(cuMemHostAlloc, 2020)                         \
  X(cuMemHostRegister, 6050) X(cuMemHostUnregister, 4000) X(cuMemHostGetDevicePointer, 3020)     \
  X(cuMemHostGetFlags, 2030) X(cuMemAllocManaged, 6000) X(cuMemAllocAsync, 11020)                \
  X(cuMemFreeAsync, 11020) X(cuMemGetInfo, 3020) X(cuPointerGetAttribute, 4000)                  \
  X(cuMemcpyHtoD, 3020) X(cuMemcpyDtoH, 3020) X(cuMemcpyDtoD, 3020) X(cuMemcpyHtoDAsync, 3020)   \
  X(cuMemcpyDtoHAsync, 3020) X(cuMemcpyDtoDAsync, 3020) X(cuMemcpy, 4000) X(cuMemcpyAsync, 4000) \
  X(cuMemcpy2D, 3020) X(cuMemcpy2DAsync, 3020) X(cuMemsetD8, 3020) X(cuMemsetD8Async, 3020)      \
  X(cuStreamCreate, 2000) X(cuStreamCreateWithPriority, 5050) X(cuStreamDestroy, 4000)           \
  X(cuStreamQuery, 2000) X(cuStreamSynchronize, 2000) X(cuStreamWaitEvent, 3020)                 \
  X(cuStreamGetFlags, 5050) X(cuStreamGetPriority, 5050) X(cuEventCreate, 2000)                  \
  X(cuEventDestroy, 4000) X(cuEventRecord, 2000) X(cuEventRecordWithFlags, 11010)                \
  X(cuEventQuery, 2000) X(cuEventSynchronize, 2000) X(cuEventElapsedTime, 12080)                 \
  X(cuModuleLoadData, 2000) X(cuModuleGetFunction, 2000) X(cuLaunchKernel, 4000)                 \
  X(cuLaunchKernelEx, 11060) X(cuFuncGetName, 12030) X(cuProfilerStart, 4000)                    \
  X(cuProfilerStop, 4000) X(cuFuncGetAttribute, 2020) X(cuFuncSetAttribute, 9000)                \
  X(cuFuncSetCacheConfig, 3000) X(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags, 7000)    \
  X(cuOccupancyAvailableDynamicSMemPerBlock, 10020) X(cuStreamAddCallback, 5000)                 \
  X(cuLaunchHostFunc, 10000) X(cuMemAllocPitch, 3020) X(cuMemcpy3D, 3020) X(cuMemcpy3DAsync, 3020)   \
  X(cuMemsetD2D8, 3020) X(cuMemsetD2D8Async, 3020)

// Field names go through cuda.h's renaming macros (cuMemAlloc -> cuMemAlloc_v2)
// both where they are declared and where they are used, so they stay in step.
struct DriverTable {
#define SIMGPU_RT_FIELD(name, version) PFN_##name##_v##version name = nullptr;
  SIMGPU_RT_DRIVER_FUNCTIONS(SIMGPU_RT_FIELD)
#undef SIMGPU_RT_FIELD
};

// The outcome of loading the driver: `loaded` once libcuda.so.1 and its
// entry points were found, `status` what cuInit said, as a runtime error.
struct DriverLink {
  bool loaded = false;
  cudaError_t status = cudaErrorInsufficientDriver;
  PFN_cuGetProcAddress_v12000 get_proc_address = nullptr;
  DriverTable legacy, per_thread;
};

const DriverLink& driver_link();

// The thread's sticky last error: set by every failing call.
cudaError_t record(cudaError_t e);
cudaError_t from_driver(CUresult r);
int& current_device();  // the thread's device (cudaSetDevice)

// Binds the thread to its device's primary context, as the real runtime does
// lazily on the first call that needs one.
cudaError_t ensure_context();

// cudaMemcpy3DParms in the driver's terms; cudaErrorNotSupported for CUDA
// arrays, which simgpu does not model.
cudaError_t to_driver_copy(const cudaMemcpy3DParms& p, CUDA_MEMCPY3D* out);

// The current device's CUfunction for a kernel: a host stub address (what
// <<<>>> and cudaLaunchKernel pass) or a handle from cudaGetKernel.  Loads the
// kernel's module into the device on first use.
cudaError_t kernel_function(const DriverTable& d, const void* func, CUfunction* out);

// Runs f() and records its error; no exception crosses the C ABI.
template <class F>
cudaError_t api(F&& f) {
  cudaError_t e;
  try {
    e = f();
  } catch (const std::bad_alloc&) {
    e = cudaErrorMemoryAllocation;
  } catch (...) {
    e = cudaErrorUnknown;
  }
  return record(e);
}

// Runs f(driver table) on a thread bound to its device's context; the table
// is the per-thread default stream one for the _ptsz/_ptds entry points.
template <class F>
cudaError_t with_driver(bool per_thread, F&& f) {
  return api([&]() -> cudaError_t {
    if (cudaError_t e = ensure_context()) return e;
    const DriverLink& link = driver_link();
    return f(per_thread ? link.per_thread : link.legacy);
  });
}

}  // namespace simgpu::rt

// Defines a runtime entry point and its per-thread default stream twin
// (suffix _ptsz or _ptds, as the real libcudart.so.13 exports it).
#define SIMGPU_RUNTIME_DUAL(name, suffix, params, args)                                          \
  extern "C" cudaError_t CUDARTAPI name params { return name##_impl<false> args; }              \
  extern "C" cudaError_t CUDARTAPI name##suffix params { return name##_impl<true> args; }
