// CUDA driver graphs and stream capture: what a statically linked runtime,
// cuBLAS/cuDNN and driver-API programs call, under the exact exported
// variant names cuGetProcAddress hands out for CUDA 12/13 (cuGraphAddNode_v2,
// cuStreamBeginCapture_v2, cuStreamGetCaptureInfo_v3, ...). Same records as
// the runtime family (hooks/runtime_graphs.cpp); nested under a hooked
// runtime call they are counted once.
#include <cuda.h>

#include "hooks/call_info.h"
#include "hooks/graph_calls.h"
#include "hooks/hook_support.h"

namespace gpuscope::hooks::slots {
extern HookSlot cuGraphGetNodes, cuGraphNodeGetType, cuGraphChildGraphNodeGetGraph, cuGraphNodeGetEnabled;
}  // namespace gpuscope::hooks::slots

namespace {

using namespace gpuscope::hooks::graph_rows;
namespace slots = gpuscope::hooks::slots;
constexpr uint8_t D = gpuscope::hooks::kDriverApi;
constexpr uint8_t DP = gpuscope::hooks::kDriverApi | gpuscope::hooks::kPerThreadStream;

static_assert(CU_GRAPH_NODE_TYPE_KERNEL == 0 && CU_GRAPH_NODE_TYPE_MEMCPY == 1 && CU_GRAPH_NODE_TYPE_MEMSET == 2 &&
              CU_GRAPH_NODE_TYPE_GRAPH == 4 && CU_GRAPH_NODE_TYPE_CONDITIONAL == 13,
              "registry::GraphNodeType follows CUDA's numbering");

using Graphs = gpuscope::hooks::GraphQueries<CUresult, CUgraph, CUgraphNode, CUgraphExec, CUgraphNodeType,
                                                   slots::cuGraphGetNodes, slots::cuGraphNodeGetType,
                                                   slots::cuGraphChildGraphNodeGetGraph, slots::cuGraphNodeGetEnabled>;

}  // namespace

// Node-adding calls share their first parameters.
#define GPUSCOPE_CU_ADD_NODE CUgraphNode *n, CUgraph g, const CUgraphNode *deps, size_t ndeps
#define GPUSCOPE_CU_EXEC_NODE CUgraphExec e, CUgraphNode n
#define GPUSCOPE_CU_CAPTURE_INFO                                                                                      \
  (CUstream s, CUstreamCaptureStatus * st, cuuint64_t * id, CUgraph * g, const CUgraphNode** deps,                    \
   const CUgraphEdgeData** e, size_t* n)
#define GPUSCOPE_CU_CAPTURE_TO_GRAPH                                                                                  \
  (CUstream s, CUgraph g, const CUgraphNode* deps, const CUgraphEdgeData* e, size_t n, CUstreamCaptureMode m)
#define GPUSCOPE_CU_UPDATE_CAPTURE (CUstream s, CUgraphNode * deps, const CUgraphEdgeData* e, size_t n, unsigned f)

#define GPUSCOPE_DRIVER_GRAPHS(X)                                                                                     \
  X(CUresult, cuGraphCreate, D, (CUgraph* g, unsigned f), (g, f), (plain()))                                          \
  X(CUresult, cuGraphDestroy, D, (CUgraph g), (g), (plain()))                                                         \
  X(CUresult, cuGraphClone, D, (CUgraph* c, CUgraph g), (c, g), (plain()))                                            \
  X(CUresult, cuGraphAddKernelNode_v2, D, (GPUSCOPE_CU_ADD_NODE, const CUDA_KERNEL_NODE_PARAMS* p),                   \
    (n, g, deps, ndeps, p), (plain()))                                                                                \
  X(CUresult, cuGraphAddMemcpyNode, D, (GPUSCOPE_CU_ADD_NODE, const CUDA_MEMCPY3D* p, CUcontext c),                   \
    (n, g, deps, ndeps, p, c), (plain()))                                                                             \
  X(CUresult, cuGraphAddMemsetNode, D, (GPUSCOPE_CU_ADD_NODE, const CUDA_MEMSET_NODE_PARAMS* p, CUcontext c),         \
    (n, g, deps, ndeps, p, c), (plain()))                                                                             \
  X(CUresult, cuGraphAddHostNode, D, (GPUSCOPE_CU_ADD_NODE, const CUDA_HOST_NODE_PARAMS* p),                          \
    (n, g, deps, ndeps, p), (plain()))                                                                                \
  X(CUresult, cuGraphAddChildGraphNode, D, (GPUSCOPE_CU_ADD_NODE, CUgraph child), (n, g, deps, ndeps, child),         \
    (plain()))                                                                                                        \
  X(CUresult, cuGraphAddEmptyNode, D, (GPUSCOPE_CU_ADD_NODE), (n, g, deps, ndeps), (plain()))                         \
  X(CUresult, cuGraphAddEventRecordNode, D, (GPUSCOPE_CU_ADD_NODE, CUevent ev), (n, g, deps, ndeps, ev), (plain()))   \
  X(CUresult, cuGraphAddEventWaitNode, D, (GPUSCOPE_CU_ADD_NODE, CUevent ev), (n, g, deps, ndeps, ev), (plain()))     \
  X(CUresult, cuGraphAddMemAllocNode, D, (GPUSCOPE_CU_ADD_NODE, CUDA_MEM_ALLOC_NODE_PARAMS* p),                       \
    (n, g, deps, ndeps, p), (plain()))                                                                                \
  X(CUresult, cuGraphAddMemFreeNode, D, (GPUSCOPE_CU_ADD_NODE, CUdeviceptr p), (n, g, deps, ndeps, p), (plain()))     \
  X(CUresult, cuGraphAddBatchMemOpNode, D, (GPUSCOPE_CU_ADD_NODE, const CUDA_BATCH_MEM_OP_NODE_PARAMS* p),            \
    (n, g, deps, ndeps, p), (plain()))                                                                                \
  X(CUresult, cuGraphAddNode_v2, D,                                                                                   \
    (CUgraphNode * n, CUgraph g, const CUgraphNode* deps, const CUgraphEdgeData* e, size_t ndeps,                     \
     CUgraphNodeParams* p),                                                                                           \
    (n, g, deps, e, ndeps, p), (plain()))                                                                             \
  X(CUresult, cuGraphAddDependencies_v2, D,                                                                           \
    (CUgraph g, const CUgraphNode* from, const CUgraphNode* to, const CUgraphEdgeData* e, size_t n),                  \
    (g, from, to, e, n), (plain()))                                                                                   \
  X(CUresult, cuGraphRemoveDependencies_v2, D,                                                                        \
    (CUgraph g, const CUgraphNode* from, const CUgraphNode* to, const CUgraphEdgeData* e, size_t n),                  \
    (g, from, to, e, n), (plain()))                                                                                   \
  X(CUresult, cuGraphDestroyNode, D, (CUgraphNode n), (n), (plain()))                                                 \
  X(CUresult, cuGraphConditionalHandleCreate, D,                                                                      \
    (CUgraphConditionalHandle * h, CUgraph g, CUcontext c, unsigned v, unsigned f), (h, g, c, v, f), (plain()))       \
  X(CUresult, cuGraphKernelNodeSetParams_v2, D, (CUgraphNode n, const CUDA_KERNEL_NODE_PARAMS* p), (n, p),            \
    (plain()))                                                                                                        \
  X(CUresult, cuGraphMemcpyNodeSetParams, D, (CUgraphNode n, const CUDA_MEMCPY3D* p), (n, p), (plain()))              \
  X(CUresult, cuGraphMemsetNodeSetParams, D, (CUgraphNode n, const CUDA_MEMSET_NODE_PARAMS* p), (n, p), (plain()))    \
  X(CUresult, cuGraphHostNodeSetParams, D, (CUgraphNode n, const CUDA_HOST_NODE_PARAMS* p), (n, p), (plain()))        \
  X(CUresult, cuGraphNodeSetParams, D, (CUgraphNode n, CUgraphNodeParams* p), (n, p), (plain()))                      \
  X(CUresult, cuGraphGetNodes, D, (CUgraph g, CUgraphNode* nodes, size_t* count), (g, nodes, count), (plain()))       \
  X(CUresult, cuGraphNodeGetType, D, (CUgraphNode n, CUgraphNodeType* t), (n, t), (plain()))                          \
  X(CUresult, cuGraphChildGraphNodeGetGraph, D, (CUgraphNode n, CUgraph* g), (n, g), (plain()))                       \
  X(CUresult, cuGraphNodeGetEnabled, D, (GPUSCOPE_CU_EXEC_NODE, unsigned* on), (e, n, on), (plain()))                 \
  X(CUresult, cuGraphNodeSetEnabled, D, (GPUSCOPE_CU_EXEC_NODE, unsigned on), (e, n, on),                             \
    (node_enabling<Graphs>(e, n, on)))                                                                                \
  X(CUresult, cuGraphInstantiateWithFlags, D, (CUgraphExec* e, CUgraph g, unsigned long long f), (e, g, f),           \
    (instantiation<Graphs>(e, g)))                                                                                    \
  X(CUresult, cuGraphInstantiate_v2, D, /* CUDA 11's, with an error log */                                            \
    (CUgraphExec * e, CUgraph g, CUgraphNode * err, char* log, size_t n), (e, g, err, log, n),                        \
    (instantiation<Graphs>(e, g)))                                                                                    \
  X(CUresult, cuGraphInstantiateWithParams, D, (CUgraphExec* e, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS* p),         \
    (e, g, p), (instantiation<Graphs>(e, g)))                                                                         \
  X(CUresult, cuGraphInstantiateWithParams_ptsz, DP, (CUgraphExec* e, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS* p),   \
    (e, g, p), (instantiation<Graphs>(e, g)))                                                                         \
  X(CUresult, cuGraphExecUpdate_v2, D, (CUgraphExec e, CUgraph g, CUgraphExecUpdateResultInfo* r), (e, g, r),         \
    (exec_update<Graphs>(e, g)))                                                                                      \
  X(CUresult, cuGraphExecKernelNodeSetParams_v2, D, (GPUSCOPE_CU_EXEC_NODE, const CUDA_KERNEL_NODE_PARAMS* p),        \
    (e, n, p), (plain()))                                                                                             \
  X(CUresult, cuGraphExecMemcpyNodeSetParams, D, (GPUSCOPE_CU_EXEC_NODE, const CUDA_MEMCPY3D* p, CUcontext c),        \
    (e, n, p, c), (plain()))                                                                                          \
  X(CUresult, cuGraphExecMemsetNodeSetParams, D,                                                                      \
    (GPUSCOPE_CU_EXEC_NODE, const CUDA_MEMSET_NODE_PARAMS* p, CUcontext c), (e, n, p, c), (plain()))                  \
  X(CUresult, cuGraphExecHostNodeSetParams, D, (GPUSCOPE_CU_EXEC_NODE, const CUDA_HOST_NODE_PARAMS* p), (e, n, p),    \
    (plain()))                                                                                                        \
  X(CUresult, cuGraphExecChildGraphNodeSetParams, D, (GPUSCOPE_CU_EXEC_NODE, CUgraph child), (e, n, child),           \
    (plain()))                                                                                                        \
  X(CUresult, cuGraphExecNodeSetParams, D, (GPUSCOPE_CU_EXEC_NODE, CUgraphNodeParams* p), (e, n, p), (plain()))       \
  X(CUresult, cuGraphUpload, D, (CUgraphExec e, CUstream s), (e, s), (plain(s)))                                      \
  X(CUresult, cuGraphUpload_ptsz, DP, (CUgraphExec e, CUstream s), (e, s), (plain(s)))                                \
  X(CUresult, cuGraphLaunch, D, (CUgraphExec e, CUstream s), (e, s), (graph_launch(e, s)))                            \
  X(CUresult, cuGraphLaunch_ptsz, DP, (CUgraphExec e, CUstream s), (e, s), (graph_launch(e, s)))                      \
  X(CUresult, cuGraphExecDestroy, D, (CUgraphExec e), (e), (exec_destroy(e)))                                         \
  X(CUresult, cuStreamBeginCapture_v2, D, (CUstream s, CUstreamCaptureMode m), (s, m), (capture_begin(s, D)))         \
  X(CUresult, cuStreamBeginCapture_v2_ptsz, DP, (CUstream s, CUstreamCaptureMode m), (s, m),                          \
    (capture_begin(s, DP)))                                                                                           \
  X(CUresult, cuStreamBeginCaptureToGraph, D, GPUSCOPE_CU_CAPTURE_TO_GRAPH, (s, g, deps, e, n, m),                    \
    (capture_begin(s, D)))                                                                                            \
  X(CUresult, cuStreamBeginCaptureToGraph_ptsz, DP, GPUSCOPE_CU_CAPTURE_TO_GRAPH, (s, g, deps, e, n, m),              \
    (capture_begin(s, DP)))                                                                                           \
  X(CUresult, cuStreamEndCapture, D, (CUstream s, CUgraph* g), (s, g), (capture_end(s, D)))                           \
  X(CUresult, cuStreamEndCapture_ptsz, DP, (CUstream s, CUgraph* g), (s, g), (capture_end(s, DP)))                    \
  X(CUresult, cuStreamIsCapturing, D, (CUstream s, CUstreamCaptureStatus* st), (s, st), (plain(s)))                   \
  X(CUresult, cuStreamIsCapturing_ptsz, DP, (CUstream s, CUstreamCaptureStatus* st), (s, st), (plain(s)))             \
  X(CUresult, cuStreamGetCaptureInfo_v3, D, GPUSCOPE_CU_CAPTURE_INFO, (s, st, id, g, deps, e, n), (plain(s)))         \
  X(CUresult, cuStreamGetCaptureInfo_v3_ptsz, DP, GPUSCOPE_CU_CAPTURE_INFO, (s, st, id, g, deps, e, n), (plain(s)))   \
  X(CUresult, cuStreamUpdateCaptureDependencies_v2, D, GPUSCOPE_CU_UPDATE_CAPTURE, (s, deps, e, n, f), (plain(s)))    \
  X(CUresult, cuStreamUpdateCaptureDependencies_v2_ptsz, DP, GPUSCOPE_CU_UPDATE_CAPTURE, (s, deps, e, n, f),          \
    (plain(s)))                                                                                                       \
  X(CUresult, cuThreadExchangeStreamCaptureMode, D, (CUstreamCaptureMode * m), (m), (plain()))

GPUSCOPE_DEFINE_FAMILY(GPUSCOPE_DRIVER_GRAPHS, driver_graph_hooks)
