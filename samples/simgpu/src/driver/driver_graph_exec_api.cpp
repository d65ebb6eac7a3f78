// Driver API entry points for executable graphs: instantiation, launch,
// update, node parameters of an executable graph, and graph memory.
#include "driver_graph_api.hpp"

// cuda.h maps these names to their newest variants; the older exports exist
// too and are defined below under their own names.
#undef cuGraphInstantiate
#undef cuGraphExecUpdate
#undef cuGraphExecKernelNodeSetParams

extern "C" CUresult CUDAAPI cuGraphInstantiate(CUgraphExec* out, CUgraph g, CUgraphNode* error_node, char* log,
                                               size_t log_size);

using simgpu::drv::Model;
using simgpu::drv::NodeParams;
using simgpu::drv::with_model;
namespace graph_api = simgpu::drv::graph_api;

namespace {

CUresult exec_set(CUgraphExec e, CUgraphNode n, const NodeParams& p) {
  return with_model([&](Model& m) { return m.graph_exec_set_params(e, n, p); });
}

template <class P>
CUresult exec_kernel_set(CUgraphExec e, CUgraphNode n, const P* params) {
  NodeParams p;
  if (CUresult r = graph_api::kernel_node(params, &p)) return r;
  return exec_set(e, n, p);
}

template <class T>
CUresult exec_member_set(CUgraphExec e, CUgraphNode n, CUgraphNodeType type, T NodeParams::*member, const T* in) {
  NodeParams p;
  if (CUresult r = graph_api::member_node(type, member, in, &p)) return r;
  return exec_set(e, n, p);
}

constexpr unsigned long long kInstantiateFlags =
    CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD |
    CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY;

template <bool PT>
CUresult cuGraphLaunch_impl(CUgraphExec e, CUstream s) {
  return with_model([&](Model& m) { return m.graph_launch(e, s, PT); });
}

// Uploading prepares device-side structures simgpu does not have.
template <bool PT>
CUresult cuGraphUpload_impl(CUgraphExec e, CUstream) {
  return with_model([&](Model& m) {
    unsigned long long flags = 0;
    return m.graph_exec_flags(e, &flags);
  });
}

template <bool PT>
CUresult cuGraphInstantiateWithParams_impl(CUgraphExec* out, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS* params) {
  if (!params || (params->flags & ~kInstantiateFlags)) return CUDA_ERROR_INVALID_VALUE;
  params->hErrNode_out = nullptr;
  const CUresult r =
      with_model([&](Model& m) { return m.graph_instantiate(g, params->flags, out, &params->hErrNode_out); });
  params->result_out = r == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS : CUDA_GRAPH_INSTANTIATE_ERROR;
  return r;
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuGraphInstantiateWithFlags(CUgraphExec* out, CUgraph g, unsigned long long flags) {
  if (flags & ~kInstantiateFlags) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) { return m.graph_instantiate(g, flags, out, nullptr); });
}

CUresult CUDAAPI cuGraphInstantiate_v2(CUgraphExec* out, CUgraph g, CUgraphNode* error_node, char* log,
                                       size_t log_size) {
  if (log && log_size) log[0] = '\0';
  return with_model([&](Model& m) { return m.graph_instantiate(g, 0, out, error_node); });
}

CUresult CUDAAPI cuGraphInstantiate(CUgraphExec* out, CUgraph g, CUgraphNode* error_node, char* log,
                                    size_t log_size) {
  return cuGraphInstantiate_v2(out, g, error_node, log, log_size);
}

CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec e) {
  return with_model([&](Model& m) { return m.graph_exec_destroy(e); });
}

CUresult CUDAAPI cuGraphExecGetFlags(CUgraphExec e, cuuint64_t* flags) {
  if (!flags) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) {
    unsigned long long f = 0;
    const CUresult r = m.graph_exec_flags(e, &f);
    *flags = f;
    return r;
  });
}

CUresult CUDAAPI cuGraphExecUpdate_v2(CUgraphExec e, CUgraph g, CUgraphExecUpdateResultInfo* info) {
  return with_model([&](Model& m) { return m.graph_exec_update(e, g, info); });
}

CUresult CUDAAPI cuGraphExecUpdate(CUgraphExec e, CUgraph g, CUgraphNode* error_node,
                                   CUgraphExecUpdateResult* result) {
  CUgraphExecUpdateResultInfo info{};
  const CUresult r = cuGraphExecUpdate_v2(e, g, &info);
  if (error_node) *error_node = info.errorNode;
  if (result) *result = info.result;
  return r;
}

CUresult CUDAAPI cuGraphExecKernelNodeSetParams_v2(CUgraphExec e, CUgraphNode n,
                                                   const CUDA_KERNEL_NODE_PARAMS_v2* params) {
  return exec_kernel_set(e, n, params);
}

CUresult CUDAAPI cuGraphExecKernelNodeSetParams(CUgraphExec e, CUgraphNode n,
                                                const CUDA_KERNEL_NODE_PARAMS_v1* params) {
  return exec_kernel_set(e, n, params);
}

CUresult CUDAAPI cuGraphExecMemcpyNodeSetParams(CUgraphExec e, CUgraphNode n, const CUDA_MEMCPY3D* copy,
                                                CUcontext) {
  return exec_member_set(e, n, CU_GRAPH_NODE_TYPE_MEMCPY, &NodeParams::copy, copy);
}

CUresult CUDAAPI cuGraphExecMemsetNodeSetParams(CUgraphExec e, CUgraphNode n, const CUDA_MEMSET_NODE_PARAMS* params,
                                                CUcontext) {
  return exec_member_set(e, n, CU_GRAPH_NODE_TYPE_MEMSET, &NodeParams::memset, params);
}

CUresult CUDAAPI cuGraphExecHostNodeSetParams(CUgraphExec e, CUgraphNode n, const CUDA_HOST_NODE_PARAMS* params) {
  return exec_member_set(e, n, CU_GRAPH_NODE_TYPE_HOST, &NodeParams::host, params);
}

CUresult CUDAAPI cuGraphExecEventRecordNodeSetEvent(CUgraphExec e, CUgraphNode n, CUevent event) {
  return exec_member_set(e, n, CU_GRAPH_NODE_TYPE_EVENT_RECORD, &NodeParams::event, &event);
}

CUresult CUDAAPI cuGraphExecEventWaitNodeSetEvent(CUgraphExec e, CUgraphNode n, CUevent event) {
  return exec_member_set(e, n, CU_GRAPH_NODE_TYPE_WAIT_EVENT, &NodeParams::event, &event);
}

// Graph memory is reserved per node and released with its graphs: there is
// no separate cache to trim.
CUresult CUDAAPI cuDeviceGraphMemTrim(CUdevice dev) {
  return with_model([&](Model& m) { return dev >= 0 && dev < m.device_count() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE; });
}

CUresult CUDAAPI cuDeviceGetGraphMemAttribute(CUdevice dev, CUgraphMem_attribute attr, void* value) {
  if (!value || attr < CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT || attr > CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH)
    return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) {
    if (dev < 0 || dev >= m.device_count()) return CUDA_ERROR_INVALID_DEVICE;
    uint64_t current = 0, high = 0;
    const CUresult r = m.graph_memory(dev, &current, &high);
    const bool high_mark = attr == CU_GRAPH_MEM_ATTR_USED_MEM_HIGH || attr == CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH;
    *static_cast<cuuint64_t*>(value) = high_mark ? high : current;  // used == reserved: no cache
    return r;
  });
}

}  // extern "C"

SIMGPU_DRIVER_DUAL(cuGraphLaunch, _ptsz, (CUgraphExec e, CUstream s), (e, s))
SIMGPU_DRIVER_DUAL(cuGraphUpload, _ptsz, (CUgraphExec e, CUstream s), (e, s))
SIMGPU_DRIVER_DUAL(cuGraphInstantiateWithParams, _ptsz,
                   (CUgraphExec * out, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS* params), (out, g, params))
