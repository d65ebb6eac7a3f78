// Driver API entry points that build CUDA graphs: graphs, nodes of every
// type simgpu runs (kernel, memcpy, memset, host, child graph, empty, event
// record and wait, memory allocation and free), edges and queries.  Older
// variants (_v1 parameter structs, edges without edge data) forward to the
// current ones.
#include "driver_graph_api.hpp"

// cuda.h maps these names to their newest variants; the older exports exist
// too and are defined below under their own names.
#undef cuGraphAddKernelNode
#undef cuGraphKernelNodeGetParams
#undef cuGraphKernelNodeSetParams
#undef cuGraphGetEdges
#undef cuGraphNodeGetDependencies
#undef cuGraphNodeGetDependentNodes
#undef cuGraphAddDependencies
#undef cuGraphRemoveDependencies

using simgpu::drv::Model;
using simgpu::drv::NodeParams;
using simgpu::drv::with_model;
namespace graph_api = simgpu::drv::graph_api;

namespace {

CUresult add_node(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t count, NodeParams params) {
  return with_model([&](Model& m) { return m.graph_add_node(g, deps, count, &params, out); });
}

constexpr CUgraphNodeType kMemcpy = CU_GRAPH_NODE_TYPE_MEMCPY, kMemset = CU_GRAPH_NODE_TYPE_MEMSET,
                          kHost = CU_GRAPH_NODE_TYPE_HOST, kRecord = CU_GRAPH_NODE_TYPE_EVENT_RECORD,
                          kWait = CU_GRAPH_NODE_TYPE_WAIT_EVENT;

NodeParams typed(CUgraphNodeType type) {
  NodeParams p;
  p.type = type;
  return p;
}

// Reads a node's parameters of one type and hands them to `fill`.
template <class F>
CUresult get_params(CUgraphNode n, CUgraphNodeType type, F&& fill) {
  return with_model([&](Model& m) {
    NodeParams p;
    if (CUresult r = m.graph_node_params(n, type, &p)) return r;
    fill(p);
    return CUDA_SUCCESS;
  });
}

CUresult set_params(CUgraphNode n, const NodeParams& p) {
  return with_model([&](Model& m) { return m.graph_set_node_params(n, p); });
}

template <class T>
CUresult add_member_node(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t count, CUgraphNodeType type,
                         T NodeParams::*member, const T* in) {
  NodeParams p;
  if (CUresult r = graph_api::member_node(type, member, in, &p)) return r;
  return add_node(out, g, deps, count, p);
}

template <class T>
CUresult get_member(CUgraphNode n, CUgraphNodeType type, T NodeParams::*member, T* out) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  return get_params(n, type, [&](const NodeParams& p) { *out = p.*member; });
}

template <class T>
CUresult set_member(CUgraphNode n, CUgraphNodeType type, T NodeParams::*member, const T* in) {
  NodeParams p;
  if (CUresult r = graph_api::member_node(type, member, in, &p)) return r;
  return set_params(n, p);
}

template <class P>
CUresult add_kernel_node(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t count, const P* params) {
  NodeParams p;
  if (CUresult r = graph_api::kernel_node(params, &p)) return r;
  return add_node(out, g, deps, count, p);
}

template <class P>
CUresult kernel_node_get(CUgraphNode n, P* out) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  return get_params(n, CU_GRAPH_NODE_TYPE_KERNEL, [&](const NodeParams& p) { graph_api::fill_kernel(p, out); });
}

template <class P>
CUresult kernel_node_set(CUgraphNode n, const P* params) {
  NodeParams p;
  if (CUresult r = graph_api::kernel_node(params, &p)) return r;
  return set_params(n, p);
}

// Lists with edge data: simgpu's edges are all plain dependencies.
CUresult edge_data_out(CUgraphEdgeData* data, size_t count) {
  if (data) std::fill(data, data + count, CUgraphEdgeData{});
  return CUDA_SUCCESS;
}

}  // namespace

namespace simgpu::drv::graph_api {

CUresult edge_data_in(const CUgraphEdgeData* data, size_t count) {
  for (size_t i = 0; data && i < count; ++i)
    if (data[i].from_port || data[i].to_port || data[i].type) return CUDA_ERROR_NOT_SUPPORTED;
  return CUDA_SUCCESS;
}

}  // namespace simgpu::drv::graph_api

extern "C" {

CUresult CUDAAPI cuGraphCreate(CUgraph* g, unsigned int flags) {
  if (flags) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) { return m.graph_create(g); });
}

CUresult CUDAAPI cuGraphDestroy(CUgraph g) {
  return with_model([&](Model& m) { return m.graph_destroy(g); });
}

CUresult CUDAAPI cuGraphAddKernelNode_v2(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t count,
                                         const CUDA_KERNEL_NODE_PARAMS_v2* params) {
  return add_kernel_node(out, g, deps, count, params);
}

CUresult CUDAAPI cuGraphAddKernelNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t count,
                                      const CUDA_KERNEL_NODE_PARAMS_v1* params) {
  return add_kernel_node(out, g, deps, count, params);
}

CUresult CUDAAPI cuGraphKernelNodeGetParams_v2(CUgraphNode n, CUDA_KERNEL_NODE_PARAMS_v2* out) {
  return kernel_node_get(n, out);
}

CUresult CUDAAPI cuGraphKernelNodeGetParams(CUgraphNode n, CUDA_KERNEL_NODE_PARAMS_v1* out) {
  return kernel_node_get(n, out);
}

CUresult CUDAAPI cuGraphKernelNodeSetParams_v2(CUgraphNode n, const CUDA_KERNEL_NODE_PARAMS_v2* params) {
  return kernel_node_set(n, params);
}

CUresult CUDAAPI cuGraphKernelNodeSetParams(CUgraphNode n, const CUDA_KERNEL_NODE_PARAMS_v1* params) {
  return kernel_node_set(n, params);
}

CUresult CUDAAPI cuGraphAddMemcpyNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t count,
                                      const CUDA_MEMCPY3D* copy, CUcontext) {
  return add_member_node(out, g, deps, count, kMemcpy, &NodeParams::copy, copy);
}

CUresult CUDAAPI cuGraphMemcpyNodeGetParams(CUgraphNode n, CUDA_MEMCPY3D* out) {
  return get_member(n, kMemcpy, &NodeParams::copy, out);
}

CUresult CUDAAPI cuGraphMemcpyNodeSetParams(CUgraphNode n, const CUDA_MEMCPY3D* copy) {
  return set_member(n, kMemcpy, &NodeParams::copy, copy);
}

CUresult CUDAAPI cuGraphAddMemsetNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t count,
                                      const CUDA_MEMSET_NODE_PARAMS* params, CUcontext) {
  return add_member_node(out, g, deps, count, kMemset, &NodeParams::memset, params);
}

CUresult CUDAAPI cuGraphMemsetNodeGetParams(CUgraphNode n, CUDA_MEMSET_NODE_PARAMS* out) {
  return get_member(n, kMemset, &NodeParams::memset, out);
}

CUresult CUDAAPI cuGraphMemsetNodeSetParams(CUgraphNode n, const CUDA_MEMSET_NODE_PARAMS* params) {
  return set_member(n, kMemset, &NodeParams::memset, params);
}

CUresult CUDAAPI cuGraphAddHostNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t count,
                                    const CUDA_HOST_NODE_PARAMS* params) {
  return add_member_node(out, g, deps, count, kHost, &NodeParams::host, params);
}

CUresult CUDAAPI cuGraphHostNodeGetParams(CUgraphNode n, CUDA_HOST_NODE_PARAMS* out) {
  return get_member(n, kHost, &NodeParams::host, out);
}

CUresult CUDAAPI cuGraphHostNodeSetParams(CUgraphNode n, const CUDA_HOST_NODE_PARAMS* params) {
  return set_member(n, kHost, &NodeParams::host, params);
}

CUresult CUDAAPI cuGraphAddChildGraphNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t count,
                                          CUgraph child) {
  NodeParams p = typed(CU_GRAPH_NODE_TYPE_GRAPH);
  // Borrowed for the call: the model makes the node's own copy.
  p.child = std::shared_ptr<CUgraph_st>(child, [](CUgraph_st*) {});
  return with_model([&](Model& m) { return m.graph_add_node(g, deps, count, &p, out); });
}

CUresult CUDAAPI cuGraphChildGraphNodeGetGraph(CUgraphNode n, CUgraph* out) {
  return with_model([&](Model& m) { return m.graph_child(n, out); });
}

CUresult CUDAAPI cuGraphAddEmptyNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t count) {
  return add_node(out, g, deps, count, typed(CU_GRAPH_NODE_TYPE_EMPTY));
}

CUresult CUDAAPI cuGraphAddEventRecordNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t count,
                                           CUevent e) {
  return add_member_node(out, g, deps, count, kRecord, &NodeParams::event, &e);
}

CUresult CUDAAPI cuGraphAddEventWaitNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t count,
                                         CUevent e) {
  return add_member_node(out, g, deps, count, kWait, &NodeParams::event, &e);
}

CUresult CUDAAPI cuGraphEventRecordNodeGetEvent(CUgraphNode n, CUevent* out) {
  return get_member(n, kRecord, &NodeParams::event, out);
}

CUresult CUDAAPI cuGraphEventWaitNodeGetEvent(CUgraphNode n, CUevent* out) {
  return get_member(n, kWait, &NodeParams::event, out);
}

CUresult CUDAAPI cuGraphEventRecordNodeSetEvent(CUgraphNode n, CUevent e) {
  return set_member(n, kRecord, &NodeParams::event, &e);
}

CUresult CUDAAPI cuGraphEventWaitNodeSetEvent(CUgraphNode n, CUevent e) {
  return set_member(n, kWait, &NodeParams::event, &e);
}

CUresult CUDAAPI cuGraphAddMemAllocNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t count,
                                        CUDA_MEM_ALLOC_NODE_PARAMS* params) {
  if (!params || params->poolProps.allocType != CU_MEM_ALLOCATION_TYPE_PINNED) return CUDA_ERROR_INVALID_VALUE;
  NodeParams p = typed(CU_GRAPH_NODE_TYPE_MEM_ALLOC);
  p.memory_bytes = params->bytesize;
  const CUresult r = with_model([&](Model& m) { return m.graph_add_node(g, deps, count, &p, out); });
  if (r == CUDA_SUCCESS) params->dptr = p.memory_address;
  return r;
}

CUresult CUDAAPI cuGraphMemAllocNodeGetParams(CUgraphNode n, CUDA_MEM_ALLOC_NODE_PARAMS* out) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  return get_params(n, CU_GRAPH_NODE_TYPE_MEM_ALLOC, [&](const NodeParams& p) {
    *out = CUDA_MEM_ALLOC_NODE_PARAMS{};
    out->poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    out->poolProps.location = CUmemLocation{CU_MEM_LOCATION_TYPE_DEVICE, p.device};
    out->bytesize = p.memory_bytes;
    out->dptr = p.memory_address;
  });
}

CUresult CUDAAPI cuGraphAddMemFreeNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t count,
                                       CUdeviceptr address) {
  NodeParams p = typed(CU_GRAPH_NODE_TYPE_MEM_FREE);
  p.free_address = address;
  return add_node(out, g, deps, count, p);
}

CUresult CUDAAPI cuGraphMemFreeNodeGetParams(CUgraphNode n, CUdeviceptr* out) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  return get_params(n, CU_GRAPH_NODE_TYPE_MEM_FREE, [&](const NodeParams& p) { *out = p.free_address; });
}

CUresult CUDAAPI cuGraphClone(CUgraph* out, CUgraph g) {
  return with_model([&](Model& m) { return m.graph_clone(g, out); });
}

CUresult CUDAAPI cuGraphNodeFindInClone(CUgraphNode* out, CUgraphNode original, CUgraph clone) {
  return with_model([&](Model& m) { return m.graph_find_in_clone(original, clone, out); });
}

CUresult CUDAAPI cuGraphNodeGetType(CUgraphNode n, CUgraphNodeType* type) {
  return with_model([&](Model& m) { return m.graph_node_type(n, type); });
}

CUresult CUDAAPI cuGraphGetNodes(CUgraph g, CUgraphNode* nodes, size_t* count) {
  return with_model([&](Model& m) { return m.graph_nodes(g, false, nodes, count); });
}

CUresult CUDAAPI cuGraphGetRootNodes(CUgraph g, CUgraphNode* nodes, size_t* count) {
  return with_model([&](Model& m) { return m.graph_nodes(g, true, nodes, count); });
}

CUresult CUDAAPI cuGraphGetEdges_v2(CUgraph g, CUgraphNode* from, CUgraphNode* to, CUgraphEdgeData* data,
                                    size_t* count) {
  return with_model([&](Model& m) {
    const CUresult r = m.graph_edges(g, from, to, count);
    return r == CUDA_SUCCESS && from ? edge_data_out(data, *count) : r;
  });
}

CUresult CUDAAPI cuGraphGetEdges(CUgraph g, CUgraphNode* from, CUgraphNode* to, size_t* count) {
  return cuGraphGetEdges_v2(g, from, to, nullptr, count);
}

CUresult CUDAAPI cuGraphNodeGetDependencies_v2(CUgraphNode n, CUgraphNode* deps, CUgraphEdgeData* data,
                                               size_t* count) {
  return with_model([&](Model& m) {
    const CUresult r = m.graph_node_neighbours(n, false, deps, count);
    return r == CUDA_SUCCESS && deps ? edge_data_out(data, *count) : r;
  });
}

CUresult CUDAAPI cuGraphNodeGetDependencies(CUgraphNode n, CUgraphNode* deps, size_t* count) {
  return cuGraphNodeGetDependencies_v2(n, deps, nullptr, count);
}

CUresult CUDAAPI cuGraphNodeGetDependentNodes_v2(CUgraphNode n, CUgraphNode* out, CUgraphEdgeData* data,
                                                 size_t* count) {
  return with_model([&](Model& m) {
    const CUresult r = m.graph_node_neighbours(n, true, out, count);
    return r == CUDA_SUCCESS && out ? edge_data_out(data, *count) : r;
  });
}

CUresult CUDAAPI cuGraphNodeGetDependentNodes(CUgraphNode n, CUgraphNode* out, size_t* count) {
  return cuGraphNodeGetDependentNodes_v2(n, out, nullptr, count);
}

CUresult CUDAAPI cuGraphAddDependencies_v2(CUgraph g, const CUgraphNode* from, const CUgraphNode* to,
                                           const CUgraphEdgeData* data, size_t count) {
  if (CUresult r = graph_api::edge_data_in(data, count)) return r;
  return with_model([&](Model& m) { return m.graph_change_edges(g, from, to, count, true); });
}

CUresult CUDAAPI cuGraphAddDependencies(CUgraph g, const CUgraphNode* from, const CUgraphNode* to, size_t count) {
  return cuGraphAddDependencies_v2(g, from, to, nullptr, count);
}

CUresult CUDAAPI cuGraphRemoveDependencies_v2(CUgraph g, const CUgraphNode* from, const CUgraphNode* to,
                                              const CUgraphEdgeData* data, size_t count) {
  if (CUresult r = graph_api::edge_data_in(data, count)) return r;
  return with_model([&](Model& m) { return m.graph_change_edges(g, from, to, count, false); });
}

CUresult CUDAAPI cuGraphRemoveDependencies(CUgraph g, const CUgraphNode* from, const CUgraphNode* to,
                                           size_t count) {
  return cuGraphRemoveDependencies_v2(g, from, to, nullptr, count);
}

CUresult CUDAAPI cuGraphDestroyNode(CUgraphNode n) {
  return with_model([&](Model& m) { return m.graph_destroy_node(n); });
}

}  // extern "C"
