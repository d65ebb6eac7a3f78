// CUDA runtime graphs and stream capture: building graphs (explicit nodes,
// capture, cloning), instantiating, updating, launching and destroying them.
// Every call is an ApiCall with its result (a failed cudaGraphCreate is
// evidence in the trace); instantiate and update also count what the
// executable graph runs (hooks/graph_calls.h), and a launch writes a
// GraphLaunch record with those counts.
//
// Our unversioned exports also interpose a libcudart.so.11.0 a program may
// load, and CUDA 11 passed more to two of these calls than CUDA 12 and 13
// do: cudaGraphInstantiate took (exec, graph, errorNode, logBuffer,
// bufferSize) where it now takes (exec, graph, flags), and
// cudaGraphExecUpdate (exec, graph, errorNode, result) where it now takes
// (exec, graph, resultInfo). Their hooks take CUDA 11's longer lists and
// pass every register on (a newer runtime never reads the extra ones):
// dropping them handed CUDA 11 garbage pointers to write its error log and
// update result to. Their declarations are renamed out of the way.
#define cudaGraphInstantiate gpuscope_cuda13_cudaGraphInstantiate
#define cudaGraphExecUpdate gpuscope_cuda13_cudaGraphExecUpdate
#include <cuda_runtime_api.h>
#undef cudaGraphInstantiate
#undef cudaGraphExecUpdate

#include "call_info.h"
#include "graph_calls.h"
#include "hook_support.h"

namespace gpuscope::hooks::slots {
extern HookSlot cudaGraphGetNodes, cudaGraphNodeGetType, cudaGraphChildGraphNodeGetGraph, cudaGraphNodeGetEnabled;
}  // namespace gpuscope::hooks::slots

namespace {

using namespace gpuscope::hooks::graph_rows;
namespace slots = gpuscope::hooks::slots;
constexpr uint8_t P = gpuscope::hooks::kPerThreadStream;

static_assert(cudaGraphNodeTypeKernel == 0 && cudaGraphNodeTypeMemcpy == 1 && cudaGraphNodeTypeMemset == 2 &&
              cudaGraphNodeTypeGraph == 4 && cudaGraphNodeTypeConditional == 13,
              "registry::GraphNodeType follows CUDA's numbering");

using Graphs =
    gpuscope::hooks::GraphQueries<cudaError_t, cudaGraph_t, cudaGraphNode_t, cudaGraphExec_t, cudaGraphNodeType,
                                  slots::cudaGraphGetNodes, slots::cudaGraphNodeGetType,
                                  slots::cudaGraphChildGraphNodeGetGraph, slots::cudaGraphNodeGetEnabled>;

}  // namespace

// Node-adding calls share their first parameters.
#define GPUSCOPE_ADD_NODE cudaGraphNode_t *n, cudaGraph_t g, const cudaGraphNode_t *deps, size_t ndeps
#define GPUSCOPE_EXEC_NODE cudaGraphExec_t e, cudaGraphNode_t n

#define GPUSCOPE_RUNTIME_GRAPHS(X)                                                                                    \
  X(cudaError_t, cudaGraphCreate, 0, (cudaGraph_t* g, unsigned f), (g, f), (plain()))                                 \
  X(cudaError_t, cudaGraphDestroy, 0, (cudaGraph_t g), (g), (plain()))                                                \
  X(cudaError_t, cudaGraphClone, 0, (cudaGraph_t* c, cudaGraph_t g), (c, g), (plain()))                               \
  X(cudaError_t, cudaGraphAddKernelNode, 0, (GPUSCOPE_ADD_NODE, const cudaKernelNodeParams* p),                       \
    (n, g, deps, ndeps, p),                                                                                           \
    (plain()))                                                                                                        \
  X(cudaError_t, cudaGraphAddMemcpyNode, 0, (GPUSCOPE_ADD_NODE, const cudaMemcpy3DParms* p), (n, g, deps, ndeps, p),  \
    (plain()))                                                                                                        \
  X(cudaError_t, cudaGraphAddMemcpyNode1D, 0,                                                                         \
    (GPUSCOPE_ADD_NODE, void* dst, const void* src, size_t count, cudaMemcpyKind k),                                  \
    (n, g, deps, ndeps, dst, src, count, k), (plain()))                                                               \
  X(cudaError_t, cudaGraphAddMemcpyNodeToSymbol, 0,                                                                   \
    (GPUSCOPE_ADD_NODE, const void* sym, const void* src, size_t count, size_t off, cudaMemcpyKind k),                \
    (n, g, deps, ndeps, sym, src, count, off, k), (plain()))                                                          \
  X(cudaError_t, cudaGraphAddMemcpyNodeFromSymbol, 0,                                                                 \
    (GPUSCOPE_ADD_NODE, void* dst, const void* sym, size_t count, size_t off, cudaMemcpyKind k),                      \
    (n, g, deps, ndeps, dst, sym, count, off, k), (plain()))                                                          \
  X(cudaError_t, cudaGraphAddMemsetNode, 0, (GPUSCOPE_ADD_NODE, const cudaMemsetParams* p), (n, g, deps, ndeps, p),   \
    (plain()))                                                                                                        \
  X(cudaError_t, cudaGraphAddHostNode, 0, (GPUSCOPE_ADD_NODE, const cudaHostNodeParams* p), (n, g, deps, ndeps, p),   \
    (plain()))                                                                                                        \
  X(cudaError_t, cudaGraphAddChildGraphNode, 0, (GPUSCOPE_ADD_NODE, cudaGraph_t child), (n, g, deps, ndeps, child),   \
    (plain()))                                                                                                        \
  X(cudaError_t, cudaGraphAddEmptyNode, 0, (GPUSCOPE_ADD_NODE), (n, g, deps, ndeps), (plain()))                       \
  X(cudaError_t, cudaGraphAddEventRecordNode, 0, (GPUSCOPE_ADD_NODE, cudaEvent_t ev), (n, g, deps, ndeps, ev),        \
    (plain()))                                                                                                        \
  X(cudaError_t, cudaGraphAddEventWaitNode, 0, (GPUSCOPE_ADD_NODE, cudaEvent_t ev), (n, g, deps, ndeps, ev),          \
    (plain()))                                                                                                        \
  X(cudaError_t, cudaGraphAddMemAllocNode, 0, (GPUSCOPE_ADD_NODE, cudaMemAllocNodeParams* p),                         \
    (n, g, deps, ndeps, p), (plain()))                                                                                \
  X(cudaError_t, cudaGraphAddMemFreeNode, 0, (GPUSCOPE_ADD_NODE, void* p), (n, g, deps, ndeps, p), (plain()))         \
  X(cudaError_t, cudaGraphAddNode, 0,                                                                                 \
    (cudaGraphNode_t* n, cudaGraph_t g, const cudaGraphNode_t* deps, const cudaGraphEdgeData* edges, size_t ndeps,    \
     cudaGraphNodeParams* p),                                                                                         \
    (n, g, deps, edges, ndeps, p), (plain()))                                                                         \
  X(cudaError_t, cudaGraphAddDependencies, 0,                                                                         \
    (cudaGraph_t g, const cudaGraphNode_t* from, const cudaGraphNode_t* to, const cudaGraphEdgeData* e, size_t n),    \
    (g, from, to, e, n), (plain()))                                                                                   \
  X(cudaError_t, cudaGraphRemoveDependencies, 0,                                                                      \
    (cudaGraph_t g, const cudaGraphNode_t* from, const cudaGraphNode_t* to, const cudaGraphEdgeData* e, size_t n),    \
    (g, from, to, e, n), (plain()))                                                                                   \
  X(cudaError_t, cudaGraphDestroyNode, 0, (cudaGraphNode_t n), (n), (plain()))                                        \
  X(cudaError_t, cudaGraphConditionalHandleCreate, 0,                                                                 \
    (cudaGraphConditionalHandle* h, cudaGraph_t g, unsigned v, unsigned f), (h, g, v, f), (plain()))                  \
  X(cudaError_t, cudaGraphKernelNodeSetParams, 0, (cudaGraphNode_t n, const cudaKernelNodeParams* p), (n, p),         \
    (plain()))                                                                                                        \
  X(cudaError_t, cudaGraphMemcpyNodeSetParams, 0, (cudaGraphNode_t n, const cudaMemcpy3DParms* p), (n, p),            \
    (plain()))                                                                                                        \
  X(cudaError_t, cudaGraphMemsetNodeSetParams, 0, (cudaGraphNode_t n, const cudaMemsetParams* p), (n, p),             \
    (plain()))                                                                                                        \
  X(cudaError_t, cudaGraphHostNodeSetParams, 0, (cudaGraphNode_t n, const cudaHostNodeParams* p), (n, p), (plain()))  \
  X(cudaError_t, cudaGraphNodeSetParams, 0, (cudaGraphNode_t n, cudaGraphNodeParams* p), (n, p), (plain()))           \
  X(cudaError_t, cudaGraphGetNodes, 0, (cudaGraph_t g, cudaGraphNode_t* nodes, size_t* count), (g, nodes, count),     \
    (plain()))                                                                                                        \
  X(cudaError_t, cudaGraphNodeGetType, 0, (cudaGraphNode_t n, cudaGraphNodeType* t), (n, t), (plain()))               \
  X(cudaError_t, cudaGraphChildGraphNodeGetGraph, 0, (cudaGraphNode_t n, cudaGraph_t* g), (n, g), (plain()))          \
  X(cudaError_t, cudaGraphNodeGetEnabled, 0, (GPUSCOPE_EXEC_NODE, unsigned* on), (e, n, on), (plain()))               \
  X(cudaError_t, cudaGraphNodeSetEnabled, 0, (GPUSCOPE_EXEC_NODE, unsigned on), (e, n, on),                           \
    (node_enabling<Graphs>(e, n, on)))                                                                                \
  X(cudaError_t, cudaGraphInstantiate, 0,                                                                             \
    (cudaGraphExec_t* e, cudaGraph_t g, uintptr_t a3, uintptr_t a4, uintptr_t a5), (e, g, a3, a4, a5),              \
    (instantiation<Graphs>(e, g)))                                                                                    \
  X(cudaError_t, cudaGraphInstantiateWithFlags, 0, (cudaGraphExec_t* e, cudaGraph_t g, unsigned long long f),         \
    (e, g, f), (instantiation<Graphs>(e, g)))                                                                         \
  X(cudaError_t, cudaGraphInstantiateWithParams, 0,                                                                   \
    (cudaGraphExec_t* e, cudaGraph_t g, cudaGraphInstantiateParams* p), (e, g, p), (instantiation<Graphs>(e, g)))     \
  X(cudaError_t, cudaGraphInstantiateWithParams_ptsz, P,                                                              \
    (cudaGraphExec_t* e, cudaGraph_t g, cudaGraphInstantiateParams* p), (e, g, p), (instantiation<Graphs>(e, g)))     \
  X(cudaError_t, cudaGraphExecUpdate, 0, (cudaGraphExec_t e, cudaGraph_t g, uintptr_t a3, uintptr_t a4),              \
    (e, g, a3, a4), (exec_update<Graphs>(e, g)))                                                                      \
  X(cudaError_t, cudaGraphExecKernelNodeSetParams, 0, (GPUSCOPE_EXEC_NODE, const cudaKernelNodeParams* p),            \
    (e, n, p), (plain()))                                                                                             \
  X(cudaError_t, cudaGraphExecMemcpyNodeSetParams, 0, (GPUSCOPE_EXEC_NODE, const cudaMemcpy3DParms* p), (e, n, p),    \
    (plain()))                                                                                                        \
  X(cudaError_t, cudaGraphExecMemsetNodeSetParams, 0, (GPUSCOPE_EXEC_NODE, const cudaMemsetParams* p), (e, n, p),     \
    (plain()))                                                                                                        \
  X(cudaError_t, cudaGraphExecHostNodeSetParams, 0, (GPUSCOPE_EXEC_NODE, const cudaHostNodeParams* p), (e, n, p),     \
    (plain()))                                                                                                        \
  X(cudaError_t, cudaGraphExecChildGraphNodeSetParams, 0, (GPUSCOPE_EXEC_NODE, cudaGraph_t child), (e, n, child),     \
    (plain()))                                                                                                        \
  X(cudaError_t, cudaGraphExecNodeSetParams, 0, (GPUSCOPE_EXEC_NODE, cudaGraphNodeParams* p), (e, n, p), (plain()))   \
  X(cudaError_t, cudaGraphUpload, 0, (cudaGraphExec_t e, cudaStream_t s), (e, s), (plain(s)))                         \
  X(cudaError_t, cudaGraphUpload_ptsz, P, (cudaGraphExec_t e, cudaStream_t s), (e, s), (plain(s)))                    \
  X(cudaError_t, cudaGraphLaunch, 0, (cudaGraphExec_t e, cudaStream_t s), (e, s), (graph_launch(e, s)))               \
  X(cudaError_t, cudaGraphLaunch_ptsz, P, (cudaGraphExec_t e, cudaStream_t s), (e, s), (graph_launch(e, s)))          \
  X(cudaError_t, cudaGraphExecDestroy, 0, (cudaGraphExec_t e), (e), (exec_destroy(e)))                                \
  X(cudaError_t, cudaStreamBeginCapture, 0, (cudaStream_t s, cudaStreamCaptureMode m), (s, m),                        \
    (capture_begin(s, 0)))                                                                                            \
  X(cudaError_t, cudaStreamBeginCapture_ptsz, P, (cudaStream_t s, cudaStreamCaptureMode m), (s, m),                   \
    (capture_begin(s, P)))                                                                                            \
  X(cudaError_t, cudaStreamBeginCaptureToGraph, 0,                                                                    \
    (cudaStream_t s, cudaGraph_t g, const cudaGraphNode_t* deps, const cudaGraphEdgeData* e, size_t n,                \
     cudaStreamCaptureMode m),                                                                                        \
    (s, g, deps, e, n, m), (capture_begin(s, 0)))                                                                     \
  X(cudaError_t, cudaStreamBeginCaptureToGraph_ptsz, P,                                                               \
    (cudaStream_t s, cudaGraph_t g, const cudaGraphNode_t* deps, const cudaGraphEdgeData* e, size_t n,                \
     cudaStreamCaptureMode m),                                                                                        \
    (s, g, deps, e, n, m), (capture_begin(s, P)))                                                                     \
  X(cudaError_t, cudaStreamEndCapture, 0, (cudaStream_t s, cudaGraph_t* g), (s, g), (capture_end(s, 0)))              \
  X(cudaError_t, cudaStreamEndCapture_ptsz, P, (cudaStream_t s, cudaGraph_t* g), (s, g), (capture_end(s, P)))         \
  X(cudaError_t, cudaStreamIsCapturing, 0, (cudaStream_t s, cudaStreamCaptureStatus* st), (s, st), (plain(s)))        \
  X(cudaError_t, cudaStreamIsCapturing_ptsz, P, (cudaStream_t s, cudaStreamCaptureStatus* st), (s, st), (plain(s)))   \
  X(cudaError_t, cudaStreamGetCaptureInfo, 0,                                                                         \
    (cudaStream_t s, cudaStreamCaptureStatus* st, unsigned long long* id, cudaGraph_t* g,                             \
     const cudaGraphNode_t** deps, const cudaGraphEdgeData** e, size_t* n),                                           \
    (s, st, id, g, deps, e, n), (plain(s)))                                                                           \
  X(cudaError_t, cudaStreamGetCaptureInfo_ptsz, P,                                                                    \
    (cudaStream_t s, cudaStreamCaptureStatus* st, unsigned long long* id, cudaGraph_t* g,                             \
     const cudaGraphNode_t** deps, const cudaGraphEdgeData** e, size_t* n),                                           \
    (s, st, id, g, deps, e, n), (plain(s)))                                                                           \
  X(cudaError_t, cudaStreamUpdateCaptureDependencies, 0,                                                              \
    (cudaStream_t s, cudaGraphNode_t* deps, const cudaGraphEdgeData* e, size_t n, unsigned f), (s, deps, e, n, f),    \
    (plain(s)))                                                                                                       \
  X(cudaError_t, cudaStreamUpdateCaptureDependencies_ptsz, P,                                                         \
    (cudaStream_t s, cudaGraphNode_t* deps, const cudaGraphEdgeData* e, size_t n, unsigned f), (s, deps, e, n, f),    \
    (plain(s)))                                                                                                       \
  X(cudaError_t, cudaThreadExchangeStreamCaptureMode, 0, (cudaStreamCaptureMode * m), (m), (plain()))

GPUSCOPE_DEFINE_RUNTIME_FAMILY(GPUSCOPE_RUNTIME_GRAPHS, runtime_graph_hooks)
