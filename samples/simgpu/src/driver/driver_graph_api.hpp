// Helpers shared by the driver's graph entry points.
#pragma once

#include <algorithm>

#include "driver_api.hpp"

namespace simgpu::drv::graph_api {

// A kernel node from CUDA_KERNEL_NODE_PARAMS (_v1 or _v2).  Kernel arguments
// are not kept: simgpu's kernels compute nothing.
template <class P>
CUresult kernel_node(const P* in, NodeParams* out) {
  if (!in || !in->func) return CUDA_ERROR_INVALID_VALUE;  // a CUkernel alone (library API) is not modeled
  out->type = CU_GRAPH_NODE_TYPE_KERNEL;
  out->kernel = KernelNodeParams{in->func, {in->gridDimX, in->gridDimY, in->gridDimZ},
                                 {in->blockDimX, in->blockDimY, in->blockDimZ}, in->sharedMemBytes};
  return CUDA_SUCCESS;
}

template <class P>
void fill_kernel(const NodeParams& p, P* out) {
  *out = P{};
  const KernelNodeParams& k = p.kernel;
  out->func = k.func;
  out->gridDimX = k.grid[0], out->gridDimY = k.grid[1], out->gridDimZ = k.grid[2];
  out->blockDimX = k.block[0], out->blockDimY = k.block[1], out->blockDimZ = k.block[2];
  out->sharedMemBytes = k.shared_mem;
}

// CUDA_SUCCESS when every edge is a plain dependency (all simgpu models).
CUresult edge_data_in(const CUgraphEdgeData* data, size_t count);

// A node whose parameters are one member of NodeParams (memcpy, memset, host,
// event nodes); CUDA_ERROR_INVALID_VALUE for null parameters.
template <class T>
CUresult member_node(CUgraphNodeType type, T NodeParams::*member, const T* in, NodeParams* out) {
  if (!in) return CUDA_ERROR_INVALID_VALUE;
  *out = NodeParams{};
  out->type = type;
  out->*member = *in;
  return CUDA_SUCCESS;
}

}  // namespace simgpu::drv::graph_api
