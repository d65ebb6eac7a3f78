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
  X(cuMemsetD2D8, 3020) X(cuMemsetD2D8Async, 3020) X(cuDeviceCanAccessPeer, 4000)                 \
  X(cuCtxEnablePeerAccess, 4000) X(cuCtxDisablePeerAccess, 4000) X(cuDeviceGetP2PAttribute, 8000)  \
  X(cuMemcpyPeer, 4000) X(cuMemcpyPeerAsync, 4000) X(cuMemcpy3DPeer, 4000) X(cuMemcpy3DPeerAsync, 4000) \
  SIMGPU_RT_GRAPH_FUNCTIONS(X) SIMGPU_RT_POOL_FUNCTIONS(X)

// Stream-ordered memory pools and managed memory (runtime_pool.cpp).
#define SIMGPU_RT_POOL_FUNCTIONS(X)                                                                 \
  X(cuMemAllocFromPoolAsync, 11020) X(cuDeviceGetDefaultMemPool, 11020) X(cuDeviceGetMemPool, 11020) \
  X(cuDeviceSetMemPool, 11020) X(cuMemPoolCreate, 11020) X(cuMemPoolDestroy, 11020)                  \
  X(cuMemPoolSetAttribute, 11020) X(cuMemPoolGetAttribute, 11020) X(cuMemPoolTrimTo, 11020)          \
  X(cuMemPoolSetAccess, 11020) X(cuMemPoolGetAccess, 11020) X(cuMemPrefetchAsync, 12020)             \
  X(cuMemAdvise, 12020) X(cuMemRangeGetAttribute, 8000) X(cuStreamAttachMemAsync, 6000)                \
  X(cuCtxSetLimit, 3010) X(cuCtxGetLimit, 3010) X(cuCtxSetCacheConfig, 3020) X(cuCtxGetCacheConfig, 3020) \
  X(cuStreamGetId, 12000) X(cuStreamGetDevice, 12080) X(cuLaunchCooperativeKernel, 9000)             \
  X(cuArray3DCreate, 3020) X(cuArrayDestroy, 2000) X(cuArray3DGetDescriptor, 3020)                    \
  X(cuMipmappedArrayCreate, 5000) X(cuMipmappedArrayDestroy, 5000) X(cuMipmappedArrayGetLevel, 5000)  \
  X(cuMemcpyHtoA, 3020) X(cuMemcpyAtoH, 3020) X(cuMemcpyHtoAAsync, 3020) X(cuMemcpyAtoHAsync, 3020)   \
  X(cuMemcpyAtoA, 3020) X(cuMemcpyDtoA, 3020) X(cuMemcpyAtoD, 3020) X(cuTexObjectCreate, 5000)       \
  X(cuTexObjectDestroy, 5000) X(cuSurfObjectCreate, 5000) X(cuSurfObjectDestroy, 5000)                \
  X(cuModuleGetGlobal, 3020) X(cuGetExportTable, 3000) X(cuMemcpyBatchAsync, 13000)                \
  X(cuMemcpy3DBatchAsync, 13000)

// The graph and stream capture entry points (runtime_graph*.cpp).
#define SIMGPU_RT_GRAPH_FUNCTIONS(X)                                                                    \
  X(cuStreamBeginCapture, 10010) X(cuStreamBeginCaptureToGraph, 12030) X(cuStreamEndCapture, 10000)     \
  X(cuStreamIsCapturing, 10000) X(cuStreamGetCaptureInfo, 12030)                                       \
  X(cuStreamUpdateCaptureDependencies, 12030) X(cuThreadExchangeStreamCaptureMode, 10010)              \
  X(cuGraphCreate, 10000) X(cuGraphDestroy, 10000) X(cuGraphAddKernelNode, 12000)                       \
  X(cuGraphKernelNodeGetParams, 12000) X(cuGraphKernelNodeSetParams, 12000)                             \
  X(cuGraphAddMemcpyNode, 10000) X(cuGraphMemcpyNodeGetParams, 10000) X(cuGraphMemcpyNodeSetParams, 10000) \
  X(cuGraphAddMemsetNode, 10000) X(cuGraphMemsetNodeGetParams, 10000) X(cuGraphMemsetNodeSetParams, 10000) \
  X(cuGraphAddHostNode, 10000) X(cuGraphHostNodeGetParams, 10000) X(cuGraphHostNodeSetParams, 10000)    \
  X(cuGraphAddChildGraphNode, 10000) X(cuGraphChildGraphNodeGetGraph, 10000) X(cuGraphAddEmptyNode, 10000) \
  X(cuGraphAddEventRecordNode, 11010) X(cuGraphAddEventWaitNode, 11010)                                 \
  X(cuGraphEventRecordNodeGetEvent, 11010) X(cuGraphEventRecordNodeSetEvent, 11010)                     \
  X(cuGraphEventWaitNodeGetEvent, 11010) X(cuGraphEventWaitNodeSetEvent, 11010)                         \
  X(cuGraphAddMemAllocNode, 11040) X(cuGraphMemAllocNodeGetParams, 11040) X(cuGraphAddMemFreeNode, 11040) \
  X(cuGraphMemFreeNodeGetParams, 11040) X(cuGraphClone, 10000) X(cuGraphNodeFindInClone, 10000)         \
  X(cuGraphNodeGetType, 10000) X(cuGraphGetNodes, 10000) X(cuGraphGetRootNodes, 10000)                  \
  X(cuGraphGetEdges, 12030) X(cuGraphNodeGetDependencies, 12030) X(cuGraphNodeGetDependentNodes, 12030) \
  X(cuGraphAddDependencies, 12030) X(cuGraphRemoveDependencies, 12030) X(cuGraphDestroyNode, 10000)     \
  X(cuGraphInstantiateWithFlags, 11040) X(cuGraphInstantiateWithParams, 12000) X(cuGraphExecGetFlags, 12000) \
  X(cuGraphExecKernelNodeSetParams, 12000) X(cuGraphExecMemcpyNodeSetParams, 10020)                     \
  X(cuGraphExecMemsetNodeSetParams, 10020) X(cuGraphExecHostNodeSetParams, 10020)                       \
  X(cuGraphExecEventRecordNodeSetEvent, 11010) X(cuGraphExecEventWaitNodeSetEvent, 11010)               \
  X(cuGraphExecUpdate, 12000) X(cuGraphLaunch, 10000) X(cuGraphUpload, 11010) X(cuGraphExecDestroy, 10000) \
  X(cuDeviceGraphMemTrim, 11040) X(cuDeviceGetGraphMemAttribute, 11040)

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

// A pointer as the driver's device address.
inline CUdeviceptr dptr(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }

// Whether a cudaMemcpyKind is one the runtime knows.
inline bool valid_kind(cudaMemcpyKind kind) { return kind >= cudaMemcpyHostToHost && kind <= cudaMemcpyDefault; }

// The thread's sticky last error: set by every failing call.
cudaError_t record(cudaError_t e);
cudaError_t from_driver(CUresult r);
int& current_device();  // the thread's device (cudaSetDevice)

// Binds the thread to its device's primary context, as the real runtime does
// lazily on the first call that needs one.
cudaError_t ensure_context();
// A device's primary context, retained on first use.
cudaError_t primary_context(int dev, CUcontext* out);

// cudaMemcpy3DParms in the driver's terms; cudaErrorNotSupported for CUDA
// arrays, which graph nodes in simgpu do not take.
cudaError_t to_driver_copy(const cudaMemcpy3DParms& p, CUDA_MEMCPY3D* out);
// The same with array sides, whose element size the driver is asked for
// (runtime_arrays.cpp).
cudaError_t array_copy_3d(const DriverTable& d, const cudaMemcpy3DParms& p, CUDA_MEMCPY3D* out);
// One row of `bytes` bytes, as the 1D memcpy node calls describe it.
cudaMemcpy3DParms linear_copy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind);

// The host stub a CUfunction was made from (nullptr for one loaded through
// the driver API): what cudaGraphKernelNodeGetParams reports.
const void* host_function(CUfunction f);

// The current device's module of a fat binary (the handle
// __cudaRegisterFatBinary returned), loaded on first use.
cudaError_t module_of(const DriverTable& d, void** fatbin_handle, CUmodule* out);

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

// One driver call on a thread bound to its device, as a runtime error.
template <class F>
cudaError_t pass(F&& call) {
  return with_driver(false, [&](const DriverTable& d) { return from_driver(call(d)); });
}

}  // namespace simgpu::rt

// Defines a runtime entry point and its per-thread default stream twin
// (suffix _ptsz or _ptds, as the real libcudart.so.13 exports it).
#define SIMGPU_RUNTIME_DUAL(name, suffix, params, args)                                          \
  extern "C" cudaError_t CUDARTAPI name params { return name##_impl<false> args; }              \
  extern "C" cudaError_t CUDARTAPI name##suffix params { return name##_impl<true> args; }
