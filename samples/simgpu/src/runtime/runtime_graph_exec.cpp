// Runtime entry points for graph queries, edges, executable graphs and
// stream capture.  The types are the driver's; calls pass through.
#include "runtime.hpp"

using simgpu::rt::DriverTable;
using simgpu::rt::from_driver;
using simgpu::rt::pass;
using simgpu::rt::with_driver;

namespace {

template <bool PT>
cudaError_t cudaGraphLaunch_impl(cudaGraphExec_t e, cudaStream_t s) {
  return with_driver(PT, [&](const DriverTable& d) { return from_driver(d.cuGraphLaunch(e, s)); });
}

template <bool PT>
cudaError_t cudaGraphUpload_impl(cudaGraphExec_t e, cudaStream_t s) {
  return with_driver(PT, [&](const DriverTable& d) { return from_driver(d.cuGraphUpload(e, s)); });
}

// cudaGraphInstantiateParams and CUDA_GRAPH_INSTANTIATE_PARAMS share their layout.
template <bool PT>
cudaError_t cudaGraphInstantiateWithParams_impl(cudaGraphExec_t* out, cudaGraph_t g, cudaGraphInstantiateParams* p) {
  return with_driver(PT, [&](const DriverTable& d) {
    return from_driver(d.cuGraphInstantiateWithParams(out, g, reinterpret_cast<CUDA_GRAPH_INSTANTIATE_PARAMS*>(p)));
  });
}

template <bool PT>
cudaError_t cudaStreamBeginCapture_impl(cudaStream_t s, cudaStreamCaptureMode mode) {
  return with_driver(PT, [&](const DriverTable& d) {
    return from_driver(d.cuStreamBeginCapture(s, static_cast<CUstreamCaptureMode>(mode)));
  });
}

template <bool PT>
cudaError_t cudaStreamBeginCaptureToGraph_impl(cudaStream_t s, cudaGraph_t g, const cudaGraphNode_t* deps,
                                               const cudaGraphEdgeData* data, size_t count,
                                               cudaStreamCaptureMode mode) {
  return with_driver(PT, [&](const DriverTable& d) {
    return from_driver(d.cuStreamBeginCaptureToGraph(s, g, deps, reinterpret_cast<const CUgraphEdgeData*>(data), count,
                                                     static_cast<CUstreamCaptureMode>(mode)));
  });
}

template <bool PT>
cudaError_t cudaStreamEndCapture_impl(cudaStream_t s, cudaGraph_t* g) {
  return with_driver(PT, [&](const DriverTable& d) { return from_driver(d.cuStreamEndCapture(s, g)); });
}

template <bool PT>
cudaError_t cudaStreamIsCapturing_impl(cudaStream_t s, cudaStreamCaptureStatus* status) {
  return with_driver(PT, [&](const DriverTable& d) {
    return from_driver(d.cuStreamIsCapturing(s, reinterpret_cast<CUstreamCaptureStatus*>(status)));
  });
}

template <bool PT>
cudaError_t cudaStreamGetCaptureInfo_impl(cudaStream_t s, cudaStreamCaptureStatus* status, unsigned long long* id,
                                          cudaGraph_t* g, const cudaGraphNode_t** deps,
                                          const cudaGraphEdgeData** data, size_t* count) {
  return with_driver(PT, [&](const DriverTable& d) {
    return from_driver(d.cuStreamGetCaptureInfo(s, reinterpret_cast<CUstreamCaptureStatus*>(status),
                                                 reinterpret_cast<cuuint64_t*>(id), g, deps,
                                                 reinterpret_cast<const CUgraphEdgeData**>(data), count));
  });
}

template <bool PT>
cudaError_t cudaStreamUpdateCaptureDependencies_impl(cudaStream_t s, cudaGraphNode_t* deps,
                                                     const cudaGraphEdgeData* data, size_t count, unsigned flags) {
  return with_driver(PT, [&](const DriverTable& d) {
    return from_driver(
        d.cuStreamUpdateCaptureDependencies(s, deps, reinterpret_cast<const CUgraphEdgeData*>(data), count, flags));
  });
}

}  // namespace

extern "C" {

cudaError_t CUDARTAPI cudaThreadExchangeStreamCaptureMode(cudaStreamCaptureMode* mode) {
  return pass([&](const DriverTable& d) {
    return d.cuThreadExchangeStreamCaptureMode(reinterpret_cast<CUstreamCaptureMode*>(mode));
  });
}

cudaError_t CUDARTAPI cudaGraphClone(cudaGraph_t* out, cudaGraph_t g) {
  return pass([&](const DriverTable& d) { return d.cuGraphClone(out, g); });
}

cudaError_t CUDARTAPI cudaGraphNodeFindInClone(cudaGraphNode_t* out, cudaGraphNode_t original, cudaGraph_t clone) {
  return pass([&](const DriverTable& d) { return d.cuGraphNodeFindInClone(out, original, clone); });
}

cudaError_t CUDARTAPI cudaGraphNodeGetType(cudaGraphNode_t n, cudaGraphNodeType* type) {
  return pass([&](const DriverTable& d) { return d.cuGraphNodeGetType(n, reinterpret_cast<CUgraphNodeType*>(type)); });
}

cudaError_t CUDARTAPI cudaGraphGetNodes(cudaGraph_t g, cudaGraphNode_t* nodes, size_t* count) {
  return pass([&](const DriverTable& d) { return d.cuGraphGetNodes(g, nodes, count); });
}

cudaError_t CUDARTAPI cudaGraphGetRootNodes(cudaGraph_t g, cudaGraphNode_t* nodes, size_t* count) {
  return pass([&](const DriverTable& d) { return d.cuGraphGetRootNodes(g, nodes, count); });
}

cudaError_t CUDARTAPI cudaGraphGetEdges(cudaGraph_t g, cudaGraphNode_t* from, cudaGraphNode_t* to,
                                        cudaGraphEdgeData* data, size_t* count) {
  return pass([&](const DriverTable& d) {
    return d.cuGraphGetEdges(g, from, to, reinterpret_cast<CUgraphEdgeData*>(data), count);
  });
}

cudaError_t CUDARTAPI cudaGraphNodeGetDependencies(cudaGraphNode_t n, cudaGraphNode_t* deps, cudaGraphEdgeData* data,
                                                   size_t* count) {
  return pass([&](const DriverTable& d) {
    return d.cuGraphNodeGetDependencies(n, deps, reinterpret_cast<CUgraphEdgeData*>(data), count);
  });
}

cudaError_t CUDARTAPI cudaGraphNodeGetDependentNodes(cudaGraphNode_t n, cudaGraphNode_t* out, cudaGraphEdgeData* data,
                                                     size_t* count) {
  return pass([&](const DriverTable& d) {
    return d.cuGraphNodeGetDependentNodes(n, out, reinterpret_cast<CUgraphEdgeData*>(data), count);
  });
}

cudaError_t CUDARTAPI cudaGraphAddDependencies(cudaGraph_t g, const cudaGraphNode_t* from, const cudaGraphNode_t* to,
                                               const cudaGraphEdgeData* data, size_t count) {
  return pass([&](const DriverTable& d) {
    return d.cuGraphAddDependencies(g, from, to, reinterpret_cast<const CUgraphEdgeData*>(data), count);
  });
}

cudaError_t CUDARTAPI cudaGraphRemoveDependencies(cudaGraph_t g, const cudaGraphNode_t* from,
                                                  const cudaGraphNode_t* to, const cudaGraphEdgeData* data,
                                                  size_t count) {
  return pass([&](const DriverTable& d) {
    return d.cuGraphRemoveDependencies(g, from, to, reinterpret_cast<const CUgraphEdgeData*>(data), count);
  });
}

cudaError_t CUDARTAPI cudaGraphDestroyNode(cudaGraphNode_t n) {
  return pass([&](const DriverTable& d) { return d.cuGraphDestroyNode(n); });
}

cudaError_t CUDARTAPI cudaGraphInstantiate(cudaGraphExec_t* out, cudaGraph_t g, unsigned long long flags) {
  return pass([&](const DriverTable& d) { return d.cuGraphInstantiateWithFlags(out, g, flags); });
}

cudaError_t CUDARTAPI cudaGraphInstantiateWithFlags(cudaGraphExec_t* out, cudaGraph_t g, unsigned long long flags) {
  return pass([&](const DriverTable& d) { return d.cuGraphInstantiateWithFlags(out, g, flags); });
}

cudaError_t CUDARTAPI cudaGraphExecGetFlags(cudaGraphExec_t e, unsigned long long* flags) {
  return pass([&](const DriverTable& d) { return d.cuGraphExecGetFlags(e, reinterpret_cast<cuuint64_t*>(flags)); });
}

cudaError_t CUDARTAPI cudaGraphExecDestroy(cudaGraphExec_t e) {
  return pass([&](const DriverTable& d) { return d.cuGraphExecDestroy(e); });
}

// cudaGraphExecUpdateResultInfo and CUgraphExecUpdateResultInfo share their layout.
cudaError_t CUDARTAPI cudaGraphExecUpdate(cudaGraphExec_t e, cudaGraph_t g, cudaGraphExecUpdateResultInfo* info) {
  return pass([&](const DriverTable& d) {
    return d.cuGraphExecUpdate(e, g, reinterpret_cast<CUgraphExecUpdateResultInfo*>(info));
  });
}

cudaError_t CUDARTAPI cudaGraphExecKernelNodeSetParams(cudaGraphExec_t e, cudaGraphNode_t n,
                                                       const cudaKernelNodeParams* p) {
  return with_driver(false, [&](const DriverTable& d) -> cudaError_t {
    if (!p) return cudaErrorInvalidValue;
    CUDA_KERNEL_NODE_PARAMS k{};
    if (cudaError_t err = simgpu::rt::kernel_function(d, p->func, &k.func)) return err;
    k.gridDimX = p->gridDim.x, k.gridDimY = p->gridDim.y, k.gridDimZ = p->gridDim.z;
    k.blockDimX = p->blockDim.x, k.blockDimY = p->blockDim.y, k.blockDimZ = p->blockDim.z;
    k.sharedMemBytes = p->sharedMemBytes;
    return from_driver(d.cuGraphExecKernelNodeSetParams(e, n, &k));
  });
}

cudaError_t CUDARTAPI cudaGraphExecMemcpyNodeSetParams(cudaGraphExec_t e, cudaGraphNode_t n,
                                                       const cudaMemcpy3DParms* p) {
  return with_driver(false, [&](const DriverTable& d) -> cudaError_t {
    CUDA_MEMCPY3D c;
    if (!p) return cudaErrorInvalidValue;
    if (cudaError_t err = simgpu::rt::to_driver_copy(*p, &c)) return err;
    return from_driver(d.cuGraphExecMemcpyNodeSetParams(e, n, &c, nullptr));
  });
}

cudaError_t CUDARTAPI cudaGraphExecMemcpyNodeSetParams1D(cudaGraphExec_t e, cudaGraphNode_t n, void* dst,
                                                         const void* src, size_t bytes, cudaMemcpyKind kind) {
  const cudaMemcpy3DParms p = simgpu::rt::linear_copy(dst, src, bytes, kind);
  return cudaGraphExecMemcpyNodeSetParams(e, n, &p);
}

cudaError_t CUDARTAPI cudaGraphExecMemsetNodeSetParams(cudaGraphExec_t e, cudaGraphNode_t n,
                                                       const cudaMemsetParams* p) {
  return with_driver(false, [&](const DriverTable& d) -> cudaError_t {
    if (!p) return cudaErrorInvalidValue;
    const CUDA_MEMSET_NODE_PARAMS m{reinterpret_cast<CUdeviceptr>(p->dst), p->pitch, p->value, p->elementSize,
                                    p->width, p->height};
    return from_driver(d.cuGraphExecMemsetNodeSetParams(e, n, &m, nullptr));
  });
}

cudaError_t CUDARTAPI cudaGraphExecHostNodeSetParams(cudaGraphExec_t e, cudaGraphNode_t n,
                                                     const cudaHostNodeParams* p) {
  return pass([&](const DriverTable& d) {
    return d.cuGraphExecHostNodeSetParams(e, n, reinterpret_cast<const CUDA_HOST_NODE_PARAMS*>(p));
  });
}

cudaError_t CUDARTAPI cudaGraphExecEventRecordNodeSetEvent(cudaGraphExec_t e, cudaGraphNode_t n, cudaEvent_t event) {
  return pass([&](const DriverTable& d) { return d.cuGraphExecEventRecordNodeSetEvent(e, n, event); });
}

cudaError_t CUDARTAPI cudaGraphExecEventWaitNodeSetEvent(cudaGraphExec_t e, cudaGraphNode_t n, cudaEvent_t event) {
  return pass([&](const DriverTable& d) { return d.cuGraphExecEventWaitNodeSetEvent(e, n, event); });
}

cudaError_t CUDARTAPI cudaDeviceGraphMemTrim(int device) {
  return pass([&](const DriverTable& d) { return d.cuDeviceGraphMemTrim(device); });
}

cudaError_t CUDARTAPI cudaDeviceGetGraphMemAttribute(int device, cudaGraphMemAttributeType attr, void* value) {
  return pass([&](const DriverTable& d) {
    return d.cuDeviceGetGraphMemAttribute(device, static_cast<CUgraphMem_attribute>(attr), value);
  });
}

}  // extern "C"

SIMGPU_RUNTIME_DUAL(cudaGraphLaunch, _ptsz, (cudaGraphExec_t e, cudaStream_t s), (e, s))
SIMGPU_RUNTIME_DUAL(cudaGraphUpload, _ptsz, (cudaGraphExec_t e, cudaStream_t s), (e, s))
SIMGPU_RUNTIME_DUAL(cudaGraphInstantiateWithParams, _ptsz,
                    (cudaGraphExec_t * out, cudaGraph_t g, cudaGraphInstantiateParams* p), (out, g, p))
SIMGPU_RUNTIME_DUAL(cudaStreamBeginCapture, _ptsz, (cudaStream_t s, cudaStreamCaptureMode mode), (s, mode))
SIMGPU_RUNTIME_DUAL(cudaStreamBeginCaptureToGraph, _ptsz,
                    (cudaStream_t s, cudaGraph_t g, const cudaGraphNode_t* deps, const cudaGraphEdgeData* data,
                     size_t count, cudaStreamCaptureMode mode),
                    (s, g, deps, data, count, mode))
SIMGPU_RUNTIME_DUAL(cudaStreamEndCapture, _ptsz, (cudaStream_t s, cudaGraph_t* g), (s, g))
SIMGPU_RUNTIME_DUAL(cudaStreamIsCapturing, _ptsz, (cudaStream_t s, cudaStreamCaptureStatus* status), (s, status))
SIMGPU_RUNTIME_DUAL(cudaStreamGetCaptureInfo, _ptsz,
                    (cudaStream_t s, cudaStreamCaptureStatus* status, unsigned long long* id, cudaGraph_t* g,
                     const cudaGraphNode_t** deps, const cudaGraphEdgeData** data, size_t* count),
                    (s, status, id, g, deps, data, count))
SIMGPU_RUNTIME_DUAL(cudaStreamUpdateCaptureDependencies, _ptsz,
                    (cudaStream_t s, cudaGraphNode_t* deps, const cudaGraphEdgeData* data, size_t count,
                     unsigned int flags),
                    (s, deps, data, count, flags))
