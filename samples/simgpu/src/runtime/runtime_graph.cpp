// Runtime entry points that build CUDA graphs.  cudaGraph_t, cudaGraphNode_t
// and the node type, edge data and capture enums are the driver's, so most
// calls pass straight through; kernel nodes name host stubs here and
// CUfunctions there, memcpy nodes cudaMemcpy3DParms here and CUDA_MEMCPY3D
// there.
#include "runtime.hpp"

using simgpu::rt::DriverTable;
using simgpu::rt::from_driver;
using simgpu::rt::with_driver;
using simgpu::rt::dptr;

namespace {

cudaError_t kernel_node(const DriverTable& d, const cudaKernelNodeParams* p, CUDA_KERNEL_NODE_PARAMS* out) {
  if (!p) return cudaErrorInvalidValue;
  *out = CUDA_KERNEL_NODE_PARAMS{};
  if (cudaError_t e = simgpu::rt::kernel_function(d, p->func, &out->func)) return e;
  out->gridDimX = p->gridDim.x, out->gridDimY = p->gridDim.y, out->gridDimZ = p->gridDim.z;
  out->blockDimX = p->blockDim.x, out->blockDimY = p->blockDim.y, out->blockDimZ = p->blockDim.z;
  out->sharedMemBytes = p->sharedMemBytes;
  out->kernelParams = p->kernelParams;
  out->extra = p->extra;
  return cudaSuccess;
}

CUDA_MEMSET_NODE_PARAMS memset_node(const cudaMemsetParams& p) {
  return CUDA_MEMSET_NODE_PARAMS{dptr(p.dst), p.pitch, p.value, p.elementSize, p.width, p.height};
}

cudaError_t copy_1d(void* dst, const void* src, size_t count, cudaMemcpyKind kind, CUDA_MEMCPY3D* out) {
  return simgpu::rt::to_driver_copy(simgpu::rt::linear_copy(dst, src, count, kind), out);
}

// A memcpy node's parameters back in the runtime's terms.
cudaMemcpy3DParms runtime_copy(const CUDA_MEMCPY3D& c) {
  cudaMemcpy3DParms p{};
  auto side = [](CUmemorytype type, const void* host, CUdeviceptr dev) {
    return type == CU_MEMORYTYPE_HOST ? const_cast<void*>(host) : reinterpret_cast<void*>(dev);
  };
  p.srcPtr = cudaPitchedPtr{side(c.srcMemoryType, c.srcHost, c.srcDevice), c.srcPitch, c.WidthInBytes, c.srcHeight};
  p.dstPtr = cudaPitchedPtr{side(c.dstMemoryType, c.dstHost, c.dstDevice), c.dstPitch, c.WidthInBytes, c.dstHeight};
  p.srcPos = cudaPos{c.srcXInBytes, c.srcY, c.srcZ};
  p.dstPos = cudaPos{c.dstXInBytes, c.dstY, c.dstZ};
  p.extent = cudaExtent{c.WidthInBytes, c.Height, c.Depth};
  const bool src_dev = c.srcMemoryType != CU_MEMORYTYPE_HOST, dst_dev = c.dstMemoryType != CU_MEMORYTYPE_HOST;
  p.kind = c.srcMemoryType == CU_MEMORYTYPE_UNIFIED || c.dstMemoryType == CU_MEMORYTYPE_UNIFIED ? cudaMemcpyDefault
           : src_dev && dst_dev ? cudaMemcpyDeviceToDevice
           : dst_dev            ? cudaMemcpyHostToDevice
           : src_dev            ? cudaMemcpyDeviceToHost
                                : cudaMemcpyHostToHost;
  return p;
}

}  // namespace

extern "C" {

cudaError_t CUDARTAPI cudaGraphCreate(cudaGraph_t* g, unsigned int flags) {
  return with_driver(false, [&](const DriverTable& d) { return from_driver(d.cuGraphCreate(g, flags)); });
}

cudaError_t CUDARTAPI cudaGraphDestroy(cudaGraph_t g) {
  return with_driver(false, [&](const DriverTable& d) { return from_driver(d.cuGraphDestroy(g)); });
}

cudaError_t CUDARTAPI cudaGraphAddKernelNode(cudaGraphNode_t* out, cudaGraph_t g, const cudaGraphNode_t* deps,
                                             size_t count, const cudaKernelNodeParams* params) {
  return with_driver(false, [&](const DriverTable& d) -> cudaError_t {
    CUDA_KERNEL_NODE_PARAMS k;
    if (cudaError_t e = kernel_node(d, params, &k)) return e;
    return from_driver(d.cuGraphAddKernelNode(out, g, deps, count, &k));
  });
}

cudaError_t CUDARTAPI cudaGraphKernelNodeGetParams(cudaGraphNode_t n, cudaKernelNodeParams* out) {
  return with_driver(false, [&](const DriverTable& d) -> cudaError_t {
    if (!out) return cudaErrorInvalidValue;
    CUDA_KERNEL_NODE_PARAMS k{};
    if (cudaError_t e = from_driver(d.cuGraphKernelNodeGetParams(n, &k))) return e;
    *out = cudaKernelNodeParams{};
    out->func = const_cast<void*>(simgpu::rt::host_function(k.func));
    out->gridDim = dim3(k.gridDimX, k.gridDimY, k.gridDimZ);
    out->blockDim = dim3(k.blockDimX, k.blockDimY, k.blockDimZ);
    out->sharedMemBytes = k.sharedMemBytes;
    return cudaSuccess;
  });
}

cudaError_t CUDARTAPI cudaGraphKernelNodeSetParams(cudaGraphNode_t n, const cudaKernelNodeParams* params) {
  return with_driver(false, [&](const DriverTable& d) -> cudaError_t {
    CUDA_KERNEL_NODE_PARAMS k;
    if (cudaError_t e = kernel_node(d, params, &k)) return e;
    return from_driver(d.cuGraphKernelNodeSetParams(n, &k));
  });
}

cudaError_t CUDARTAPI cudaGraphAddMemcpyNode(cudaGraphNode_t* out, cudaGraph_t g, const cudaGraphNode_t* deps,
                                             size_t count, const cudaMemcpy3DParms* params) {
  return with_driver(false, [&](const DriverTable& d) -> cudaError_t {
    CUDA_MEMCPY3D c;
    if (!params) return cudaErrorInvalidValue;
    if (cudaError_t e = simgpu::rt::to_driver_copy(*params, &c)) return e;
    return from_driver(d.cuGraphAddMemcpyNode(out, g, deps, count, &c, nullptr));
  });
}

cudaError_t CUDARTAPI cudaGraphAddMemcpyNode1D(cudaGraphNode_t* out, cudaGraph_t g, const cudaGraphNode_t* deps,
                                               size_t count, void* dst, const void* src, size_t bytes,
                                               cudaMemcpyKind kind) {
  return with_driver(false, [&](const DriverTable& d) -> cudaError_t {
    CUDA_MEMCPY3D c;
    if (cudaError_t e = copy_1d(dst, src, bytes, kind, &c)) return e;
    return from_driver(d.cuGraphAddMemcpyNode(out, g, deps, count, &c, nullptr));
  });
}

cudaError_t CUDARTAPI cudaGraphMemcpyNodeGetParams(cudaGraphNode_t n, cudaMemcpy3DParms* out) {
  return with_driver(false, [&](const DriverTable& d) -> cudaError_t {
    if (!out) return cudaErrorInvalidValue;
    CUDA_MEMCPY3D c{};
    if (cudaError_t e = from_driver(d.cuGraphMemcpyNodeGetParams(n, &c))) return e;
    *out = runtime_copy(c);
    return cudaSuccess;
  });
}

cudaError_t CUDARTAPI cudaGraphMemcpyNodeSetParams(cudaGraphNode_t n, const cudaMemcpy3DParms* params) {
  return with_driver(false, [&](const DriverTable& d) -> cudaError_t {
    CUDA_MEMCPY3D c;
    if (!params) return cudaErrorInvalidValue;
    if (cudaError_t e = simgpu::rt::to_driver_copy(*params, &c)) return e;
    return from_driver(d.cuGraphMemcpyNodeSetParams(n, &c));
  });
}

cudaError_t CUDARTAPI cudaGraphMemcpyNodeSetParams1D(cudaGraphNode_t n, void* dst, const void* src, size_t bytes,
                                                     cudaMemcpyKind kind) {
  return with_driver(false, [&](const DriverTable& d) -> cudaError_t {
    CUDA_MEMCPY3D c;
    if (cudaError_t e = copy_1d(dst, src, bytes, kind, &c)) return e;
    return from_driver(d.cuGraphMemcpyNodeSetParams(n, &c));
  });
}

cudaError_t CUDARTAPI cudaGraphAddMemsetNode(cudaGraphNode_t* out, cudaGraph_t g, const cudaGraphNode_t* deps,
                                             size_t count, const cudaMemsetParams* params) {
  return with_driver(false, [&](const DriverTable& d) -> cudaError_t {
    if (!params) return cudaErrorInvalidValue;
    const CUDA_MEMSET_NODE_PARAMS m = memset_node(*params);
    return from_driver(d.cuGraphAddMemsetNode(out, g, deps, count, &m, nullptr));
  });
}

cudaError_t CUDARTAPI cudaGraphMemsetNodeGetParams(cudaGraphNode_t n, cudaMemsetParams* out) {
  return with_driver(false, [&](const DriverTable& d) -> cudaError_t {
    if (!out) return cudaErrorInvalidValue;
    CUDA_MEMSET_NODE_PARAMS m{};
    if (cudaError_t e = from_driver(d.cuGraphMemsetNodeGetParams(n, &m))) return e;
    *out = cudaMemsetParams{reinterpret_cast<void*>(m.dst), m.pitch, m.value, m.elementSize, m.width, m.height};
    return cudaSuccess;
  });
}

cudaError_t CUDARTAPI cudaGraphMemsetNodeSetParams(cudaGraphNode_t n, const cudaMemsetParams* params) {
  return with_driver(false, [&](const DriverTable& d) -> cudaError_t {
    if (!params) return cudaErrorInvalidValue;
    const CUDA_MEMSET_NODE_PARAMS m = memset_node(*params);
    return from_driver(d.cuGraphMemsetNodeSetParams(n, &m));
  });
}

// cudaHostNodeParams and CUDA_HOST_NODE_PARAMS are the same two fields.
cudaError_t CUDARTAPI cudaGraphAddHostNode(cudaGraphNode_t* out, cudaGraph_t g, const cudaGraphNode_t* deps,
                                           size_t count, const cudaHostNodeParams* params) {
  return with_driver(false, [&](const DriverTable& d) {
    return from_driver(d.cuGraphAddHostNode(out, g, deps, count, reinterpret_cast<const CUDA_HOST_NODE_PARAMS*>(params)));
  });
}

cudaError_t CUDARTAPI cudaGraphHostNodeGetParams(cudaGraphNode_t n, cudaHostNodeParams* out) {
  return with_driver(false, [&](const DriverTable& d) {
    return from_driver(d.cuGraphHostNodeGetParams(n, reinterpret_cast<CUDA_HOST_NODE_PARAMS*>(out)));
  });
}

cudaError_t CUDARTAPI cudaGraphHostNodeSetParams(cudaGraphNode_t n, const cudaHostNodeParams* params) {
  return with_driver(false, [&](const DriverTable& d) {
    return from_driver(d.cuGraphHostNodeSetParams(n, reinterpret_cast<const CUDA_HOST_NODE_PARAMS*>(params)));
  });
}

cudaError_t CUDARTAPI cudaGraphAddChildGraphNode(cudaGraphNode_t* out, cudaGraph_t g, const cudaGraphNode_t* deps,
                                                 size_t count, cudaGraph_t child) {
  return with_driver(false, [&](const DriverTable& d) {
    return from_driver(d.cuGraphAddChildGraphNode(out, g, deps, count, child));
  });
}

cudaError_t CUDARTAPI cudaGraphChildGraphNodeGetGraph(cudaGraphNode_t n, cudaGraph_t* out) {
  return with_driver(false, [&](const DriverTable& d) { return from_driver(d.cuGraphChildGraphNodeGetGraph(n, out)); });
}

cudaError_t CUDARTAPI cudaGraphAddEmptyNode(cudaGraphNode_t* out, cudaGraph_t g, const cudaGraphNode_t* deps,
                                            size_t count) {
  return with_driver(false, [&](const DriverTable& d) { return from_driver(d.cuGraphAddEmptyNode(out, g, deps, count)); });
}

cudaError_t CUDARTAPI cudaGraphAddEventRecordNode(cudaGraphNode_t* out, cudaGraph_t g, const cudaGraphNode_t* deps,
                                                  size_t count, cudaEvent_t e) {
  return with_driver(false, [&](const DriverTable& d) {
    return from_driver(d.cuGraphAddEventRecordNode(out, g, deps, count, e));
  });
}

cudaError_t CUDARTAPI cudaGraphAddEventWaitNode(cudaGraphNode_t* out, cudaGraph_t g, const cudaGraphNode_t* deps,
                                                size_t count, cudaEvent_t e) {
  return with_driver(false, [&](const DriverTable& d) {
    return from_driver(d.cuGraphAddEventWaitNode(out, g, deps, count, e));
  });
}

cudaError_t CUDARTAPI cudaGraphEventRecordNodeGetEvent(cudaGraphNode_t n, cudaEvent_t* out) {
  return with_driver(false, [&](const DriverTable& d) { return from_driver(d.cuGraphEventRecordNodeGetEvent(n, out)); });
}

cudaError_t CUDARTAPI cudaGraphEventRecordNodeSetEvent(cudaGraphNode_t n, cudaEvent_t e) {
  return with_driver(false, [&](const DriverTable& d) { return from_driver(d.cuGraphEventRecordNodeSetEvent(n, e)); });
}

cudaError_t CUDARTAPI cudaGraphEventWaitNodeGetEvent(cudaGraphNode_t n, cudaEvent_t* out) {
  return with_driver(false, [&](const DriverTable& d) { return from_driver(d.cuGraphEventWaitNodeGetEvent(n, out)); });
}

cudaError_t CUDARTAPI cudaGraphEventWaitNodeSetEvent(cudaGraphNode_t n, cudaEvent_t e) {
  return with_driver(false, [&](const DriverTable& d) { return from_driver(d.cuGraphEventWaitNodeSetEvent(n, e)); });
}

cudaError_t CUDARTAPI cudaGraphAddMemAllocNode(cudaGraphNode_t* out, cudaGraph_t g, const cudaGraphNode_t* deps,
                                               size_t count, cudaMemAllocNodeParams* params) {
  return with_driver(false, [&](const DriverTable& d) -> cudaError_t {
    if (!params) return cudaErrorInvalidValue;
    CUDA_MEM_ALLOC_NODE_PARAMS a{};
    a.poolProps.allocType = static_cast<CUmemAllocationType>(params->poolProps.allocType);
    a.poolProps.location.type = static_cast<CUmemLocationType>(params->poolProps.location.type);
    a.poolProps.location.id = params->poolProps.location.id;
    a.bytesize = params->bytesize;
    const cudaError_t e = from_driver(d.cuGraphAddMemAllocNode(out, g, deps, count, &a));
    if (e == cudaSuccess) params->dptr = reinterpret_cast<void*>(a.dptr);
    return e;
  });
}

cudaError_t CUDARTAPI cudaGraphMemAllocNodeGetParams(cudaGraphNode_t n, cudaMemAllocNodeParams* out) {
  return with_driver(false, [&](const DriverTable& d) -> cudaError_t {
    if (!out) return cudaErrorInvalidValue;
    CUDA_MEM_ALLOC_NODE_PARAMS a{};
    if (cudaError_t e = from_driver(d.cuGraphMemAllocNodeGetParams(n, &a))) return e;
    *out = cudaMemAllocNodeParams{};
    out->poolProps.allocType = cudaMemAllocationTypePinned;
    out->poolProps.location = cudaMemLocation{cudaMemLocationTypeDevice, a.poolProps.location.id};
    out->bytesize = a.bytesize;
    out->dptr = reinterpret_cast<void*>(a.dptr);
    return cudaSuccess;
  });
}

cudaError_t CUDARTAPI cudaGraphAddMemFreeNode(cudaGraphNode_t* out, cudaGraph_t g, const cudaGraphNode_t* deps,
                                              size_t count, void* p) {
  return with_driver(false, [&](const DriverTable& d) {
    return from_driver(d.cuGraphAddMemFreeNode(out, g, deps, count, dptr(p)));
  });
}

cudaError_t CUDARTAPI cudaGraphMemFreeNodeGetParams(cudaGraphNode_t n, void* out) {
  return with_driver(false, [&](const DriverTable& d) {
    return from_driver(d.cuGraphMemFreeNodeGetParams(n, static_cast<CUdeviceptr*>(out)));
  });
}

}  // extern "C"
