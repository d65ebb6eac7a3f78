// CUDA graphs on tests/nodes/test.json: captured and built graphs run their
// nodes in dependency order with the model's timing, only when launched.
#include <atomic>
#include <cstring>
#include <vector>

#include <cuda.h>

#include "test_support.hpp"

namespace {

using simgpu_test::elapsed_ms;
using simgpu_test::kernel;
using simgpu_test::launch;
using simgpu_test::now_ms;

void CUDART_CB count_up(void* counter) { ++*static_cast<std::atomic<int>*>(counter); }

std::vector<cudaGraphNodeType> node_types(cudaGraph_t g) {
  size_t n = 0;
  EXPECT_EQ(cudaSuccess, cudaGraphGetNodes(g, nullptr, &n));
  std::vector<cudaGraphNode_t> nodes(n);
  EXPECT_EQ(cudaSuccess, cudaGraphGetNodes(g, nodes.data(), &n));
  std::vector<cudaGraphNodeType> types;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType t;
    EXPECT_EQ(cudaSuccess, cudaGraphNodeGetType(node, &t));
    types.push_back(t);
  }
  return types;
}

cudaKernelNodeParams kernel_params(const char* name) {
  cudaKernelNodeParams p{};
  p.func = const_cast<void*>(kernel(name));
  p.gridDim = dim3(1);
  p.blockDim = dim3(32);
  return p;
}

// Buffers of one captured round trip: upload `in`, clear `scratch`, download to `out`.
struct RoundTrip {
  static constexpr size_t kBytes = 4096;
  char *dev = nullptr, *scratch = nullptr, *in = nullptr, *out = nullptr;
  std::atomic<int> host_calls{0};
  RoundTrip() {
    EXPECT_EQ(cudaSuccess, cudaMalloc(&dev, kBytes));
    EXPECT_EQ(cudaSuccess, cudaMalloc(&scratch, kBytes));
    EXPECT_EQ(cudaSuccess, cudaMallocHost(&in, kBytes));
    EXPECT_EQ(cudaSuccess, cudaMallocHost(&out, kBytes));
    std::memset(in, 'g', kBytes);
    std::memset(out, 0, kBytes);
  }
  ~RoundTrip() {
    cudaFreeHost(in);
    cudaFreeHost(out);
    cudaFree(dev);
    cudaFree(scratch);
  }
};

// Forks s2 off s1, works on both, joins back (simpleCudaGraphs' shape) and
// ends the capture on s1, checking the capture state on the way.
cudaGraph_t capture_fork_join(RoundTrip& t, cudaStream_t s1, cudaStream_t s2) {
  cudaEvent_t fork, join;
  EXPECT_EQ(cudaSuccess, cudaEventCreate(&fork));
  EXPECT_EQ(cudaSuccess, cudaEventCreate(&join));
  EXPECT_EQ(cudaSuccess, cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
  EXPECT_EQ(cudaSuccess, cudaEventRecord(fork, s1));
  EXPECT_EQ(cudaSuccess, cudaStreamWaitEvent(s2, fork, 0));
  EXPECT_EQ(cudaSuccess, cudaMemcpyAsync(t.dev, t.in, RoundTrip::kBytes, cudaMemcpyHostToDevice, s1));
  EXPECT_EQ(cudaSuccess, cudaMemsetAsync(t.scratch, 0, RoundTrip::kBytes, s2));
  EXPECT_EQ(cudaSuccess, launch(kernel("k_10ms"), s1));
  EXPECT_EQ(cudaSuccess, launch(kernel("k_10ms"), s2));
  EXPECT_EQ(cudaSuccess, cudaEventRecord(join, s2));
  EXPECT_EQ(cudaSuccess, cudaStreamWaitEvent(s1, join, 0));
  EXPECT_EQ(cudaSuccess, cudaMemcpyAsync(t.out, t.dev, RoundTrip::kBytes, cudaMemcpyDeviceToHost, s1));
  EXPECT_EQ(cudaSuccess, cudaLaunchHostFunc(s1, count_up, &t.host_calls));
  cudaStreamCaptureStatus status;
  EXPECT_EQ(cudaSuccess, cudaStreamIsCapturing(s2, &status));
  EXPECT_EQ(cudaStreamCaptureStatusActive, status);  // s2 joined through the event
  unsigned long long id = 0;
  size_t deps = 0;
  EXPECT_EQ(cudaSuccess, cudaStreamGetCaptureInfo(s1, &status, &id, nullptr, nullptr, nullptr, &deps));
  EXPECT_NE(0u, id);
  EXPECT_EQ(1u, deps);  // the host node
  cudaGraph_t graph = nullptr;
  EXPECT_EQ(cudaSuccess, cudaStreamEndCapture(s1, &graph));
  EXPECT_EQ(cudaSuccess, cudaStreamIsCapturing(s2, &status));
  EXPECT_EQ(cudaStreamCaptureStatusNone, status);
  return graph;
}

TEST(Graphs, CapturedWorkRunsOnlyWhenTheGraphIsLaunched) {
  RoundTrip t;
  cudaStream_t s1, s2, run;
  for (cudaStream_t* s : {&s1, &s2, &run}) CUDA_OK(cudaStreamCreateWithFlags(s, cudaStreamNonBlocking));
  cudaGraph_t graph = capture_fork_join(t, s1, s2);
  ASSERT_NE(nullptr, graph);
  EXPECT_EQ(0, t.out[0]);  // captured, not run
  EXPECT_EQ(0, t.host_calls.load());
  EXPECT_EQ((std::vector<cudaGraphNodeType>{cudaGraphNodeTypeMemcpy, cudaGraphNodeTypeMemset, cudaGraphNodeTypeKernel,
                                            cudaGraphNodeTypeKernel, cudaGraphNodeTypeMemcpy, cudaGraphNodeTypeHost}),
            node_types(graph));
  cudaGraphExec_t exec = nullptr;
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  cudaEvent_t start, end;
  CUDA_OK(cudaEventCreate(&start));
  CUDA_OK(cudaEventCreate(&end));
  CUDA_OK(cudaEventRecord(start, run));
  CUDA_OK(cudaGraphLaunch(exec, run));
  CUDA_OK(cudaGraphLaunch(exec, run));
  CUDA_OK(cudaEventRecord(end, run));
  EXPECT_EQ(cudaErrorNotReady, cudaStreamQuery(run));
  CUDA_OK(cudaStreamSynchronize(run));
  EXPECT_EQ(2, t.host_calls.load());
  EXPECT_EQ('g', t.out[0]);
  EXPECT_EQ('g', t.out[RoundTrip::kBytes - 1]);
  // Two launches, each two 10 ms kernels that share the compute engine.
  EXPECT_GE(elapsed_ms(start, end), 40.0f);
  CUDA_OK(cudaGraphExecDestroy(exec));
  CUDA_OK(cudaGraphDestroy(graph));
  for (cudaStream_t s : {s1, s2, run}) CUDA_OK(cudaStreamDestroy(s));
}

struct Stamp {
  std::atomic<double> at_ms{0};
};

void CUDART_CB stamp(void* data) { static_cast<Stamp*>(data)->at_ms = now_ms(); }

TEST(Graphs, BuiltGraphRunsNodesInDependencyOrder) {
  constexpr size_t kBytes = 1024;
  char *dev = nullptr, *out = nullptr;
  CUDA_OK(cudaMalloc(&dev, kBytes));
  CUDA_OK(cudaMallocHost(&out, kBytes));
  std::memset(out, 0, kBytes);
  Stamp after_kernel;
  cudaGraph_t g;
  CUDA_OK(cudaGraphCreate(&g, 0));
  cudaGraphNode_t set, work, host, copy;
  const cudaMemsetParams fill{dev, 0, 0x5A, 1, kBytes, 1};
  CUDA_OK(cudaGraphAddMemsetNode(&set, g, nullptr, 0, &fill));
  const cudaKernelNodeParams k = kernel_params("k_10ms");
  CUDA_OK(cudaGraphAddKernelNode(&work, g, &set, 1, &k));
  const cudaHostNodeParams h{stamp, &after_kernel};
  CUDA_OK(cudaGraphAddHostNode(&host, g, &work, 1, &h));
  CUDA_OK(cudaGraphAddMemcpyNode1D(&copy, g, &host, 1, out, dev, kBytes, cudaMemcpyDeviceToHost));
  size_t count = 0;
  CUDA_OK(cudaGraphGetRootNodes(g, nullptr, &count));
  EXPECT_EQ(1u, count);
  CUDA_OK(cudaGraphGetEdges(g, nullptr, nullptr, nullptr, &count));
  EXPECT_EQ(3u, count);
  cudaGraphNode_t parent = nullptr;
  count = 1;
  CUDA_OK(cudaGraphNodeGetDependencies(copy, &parent, nullptr, &count));
  EXPECT_EQ(host, parent);
  cudaKernelNodeParams read{};
  CUDA_OK(cudaGraphKernelNodeGetParams(work, &read));
  EXPECT_EQ(k.func, read.func);
  EXPECT_EQ(32u, read.blockDim.x);
  cudaGraphExec_t exec;
  CUDA_OK(cudaGraphInstantiate(&exec, g, 0));
  const double launched = now_ms();
  CUDA_OK(cudaGraphLaunch(exec, nullptr));
  EXPECT_EQ(0.0, after_kernel.at_ms.load());
  CUDA_OK(cudaDeviceSynchronize());
  EXPECT_GE(after_kernel.at_ms.load() - launched, 9.0);  // the host node followed the kernel
  EXPECT_EQ(0x5A, out[0]);
  EXPECT_EQ(0x5A, out[kBytes - 1]);  // and the copy followed the host node
  CUDA_OK(cudaGraphExecDestroy(exec));
  CUDA_OK(cudaGraphDestroy(g));
  CUDA_OK(cudaFreeHost(out));
  CUDA_OK(cudaFree(dev));
}

TEST(Graphs, ChildGraphsClonesAndEmptyNodes) {
  cudaGraph_t child, parent;
  CUDA_OK(cudaGraphCreate(&child, 0));
  cudaGraphNode_t a, b;
  const cudaKernelNodeParams k = kernel_params("k_10ms");
  CUDA_OK(cudaGraphAddKernelNode(&a, child, nullptr, 0, &k));
  CUDA_OK(cudaGraphAddKernelNode(&b, child, &a, 1, &k));
  CUDA_OK(cudaGraphCreate(&parent, 0));
  cudaGraphNode_t first, sub, last;
  CUDA_OK(cudaGraphAddEmptyNode(&first, parent, nullptr, 0));
  CUDA_OK(cudaGraphAddChildGraphNode(&sub, parent, &first, 1, child));
  CUDA_OK(cudaGraphAddKernelNode(&last, parent, &sub, 1, &k));
  CUDA_OK(cudaGraphDestroy(child));  // the node keeps its own copy
  cudaGraph_t inner = nullptr;
  CUDA_OK(cudaGraphChildGraphNodeGetGraph(sub, &inner));
  EXPECT_EQ(2u, node_types(inner).size());
  cudaGraph_t clone;
  CUDA_OK(cudaGraphClone(&clone, parent));
  cudaGraphNode_t twin = nullptr;
  CUDA_OK(cudaGraphNodeFindInClone(&twin, last, clone));
  EXPECT_NE(last, twin);
  cudaGraphNodeType type;
  CUDA_OK(cudaGraphNodeGetType(twin, &type));
  EXPECT_EQ(cudaGraphNodeTypeKernel, type);
  CUDA_OK(cudaGraphDestroy(parent));  // the clone stands alone
  cudaGraphExec_t exec;
  CUDA_OK(cudaGraphInstantiate(&exec, clone, 0));
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  cudaEvent_t start, end;
  CUDA_OK(cudaEventCreate(&start));
  CUDA_OK(cudaEventCreate(&end));
  CUDA_OK(cudaEventRecord(start, s));
  CUDA_OK(cudaGraphLaunch(exec, s));
  CUDA_OK(cudaEventRecord(end, s));
  CUDA_OK(cudaEventSynchronize(end));
  EXPECT_GE(elapsed_ms(start, end), 30.0f);  // three chained 10 ms kernels
  CUDA_OK(cudaGraphExecDestroy(exec));
  CUDA_OK(cudaGraphDestroy(clone));
  CUDA_OK(cudaStreamDestroy(s));
}

TEST(Graphs, ExecutableGraphsTakeNewParameters) {
  cudaGraph_t g;
  CUDA_OK(cudaGraphCreate(&g, 0));
  cudaGraphNode_t node;
  const cudaKernelNodeParams short_kernel = kernel_params("k_1ms"), long_kernel = kernel_params("k_50ms");
  CUDA_OK(cudaGraphAddKernelNode(&node, g, nullptr, 0, &short_kernel));
  cudaGraphExec_t exec;
  CUDA_OK(cudaGraphInstantiate(&exec, g, 0));
  CUDA_OK(cudaGraphExecKernelNodeSetParams(exec, node, &long_kernel));
  cudaEvent_t start, end;
  CUDA_OK(cudaEventCreate(&start));
  CUDA_OK(cudaEventCreate(&end));
  CUDA_OK(cudaEventRecord(start));
  CUDA_OK(cudaGraphLaunch(exec, nullptr));
  CUDA_OK(cudaEventRecord(end));
  CUDA_OK(cudaEventSynchronize(end));
  EXPECT_GE(elapsed_ms(start, end), 50.0f);
  // Same shape: the update takes the new graph's parameters.
  cudaGraph_t same;
  CUDA_OK(cudaGraphCreate(&same, 0));
  cudaGraphNode_t other;
  CUDA_OK(cudaGraphAddKernelNode(&other, same, nullptr, 0, &short_kernel));
  cudaGraphExecUpdateResultInfo info{};
  CUDA_OK(cudaGraphExecUpdate(exec, same, &info));
  EXPECT_EQ(cudaGraphExecUpdateSuccess, info.result);
  CUDA_OK(launch(kernel("k_10ms")));  // the graph starts when this ends, however late the host is
  CUDA_OK(cudaEventRecord(start));
  CUDA_OK(cudaGraphLaunch(exec, nullptr));
  CUDA_OK(cudaEventRecord(end));
  CUDA_OK(cudaEventSynchronize(end));
  EXPECT_LT(elapsed_ms(start, end), 50.0f);
  // Another shape cannot be taken.
  cudaGraphNode_t extra;
  CUDA_OK(cudaGraphAddKernelNode(&extra, same, &other, 1, &short_kernel));
  EXPECT_EQ(cudaErrorGraphExecUpdateFailure, cudaGraphExecUpdate(exec, same, &info));
  EXPECT_EQ(cudaGraphExecUpdateErrorTopologyChanged, info.result);
  cudaGetLastError();
  CUDA_OK(cudaGraphExecDestroy(exec));
  CUDA_OK(cudaGraphDestroy(g));
  CUDA_OK(cudaGraphDestroy(same));
}

TEST(Graphs, CaptureRefusesWhatItCannotRecord) {
  cudaStream_t s, other;
  CUDA_OK(cudaStreamCreate(&s));
  CUDA_OK(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  cudaGraph_t g = nullptr;
  EXPECT_EQ(cudaErrorStreamCaptureUnsupported, cudaStreamBeginCapture(nullptr, cudaStreamCaptureModeGlobal));
  EXPECT_EQ(cudaErrorIllegalState, cudaStreamEndCapture(s, &g));
  // An unsafe call in global mode invalidates the capture.
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  void* p = nullptr;
  EXPECT_EQ(cudaErrorStreamCaptureUnsupported, cudaMalloc(&p, 256));
  EXPECT_EQ(cudaErrorStreamCaptureInvalidated, launch(kernel("k_1ms"), s));
  EXPECT_EQ(cudaErrorStreamCaptureInvalidated, cudaStreamEndCapture(s, &g));
  EXPECT_EQ(nullptr, g);
  // So does the legacy stream's implicit synchronization with a blocking stream.
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  EXPECT_EQ(cudaErrorStreamCaptureImplicit, launch(kernel("k_1ms"), nullptr));
  EXPECT_EQ(cudaErrorStreamCaptureInvalidated, cudaStreamEndCapture(s, &g));
  // Synchronizing on a capturing stream, or a stream callback, cannot be captured.
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  EXPECT_EQ(cudaErrorStreamCaptureUnsupported, cudaStreamSynchronize(s));
  EXPECT_EQ(cudaErrorStreamCaptureInvalidated, cudaStreamEndCapture(s, &g));
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  EXPECT_EQ(cudaErrorStreamCaptureUnsupported,
            cudaStreamAddCallback(s, [](cudaStream_t, cudaError_t, void*) {}, nullptr, 0));
  EXPECT_EQ(cudaErrorStreamCaptureInvalidated, cudaStreamEndCapture(s, &g));
  // A stream forked off the capture must join back before it ends.
  cudaEvent_t fork;
  CUDA_OK(cudaEventCreate(&fork));
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CUDA_OK(cudaEventRecord(fork, s));
  EXPECT_EQ(cudaErrorCapturedEvent, cudaEventQuery(fork));
  CUDA_OK(cudaStreamWaitEvent(other, fork, 0));
  CUDA_OK(launch(kernel("k_1ms"), other));
  EXPECT_EQ(cudaErrorStreamCaptureUnjoined, cudaStreamEndCapture(s, &g));
  // Relaxed mode tolerates unsafe calls.
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
  CUDA_OK(cudaMalloc(&p, 256));
  CUDA_OK(launch(kernel("k_1ms"), s));
  CUDA_OK(cudaStreamEndCapture(s, &g));
  ASSERT_NE(nullptr, g);
  EXPECT_EQ(1u, node_types(g).size());
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  CUDA_OK(cudaThreadExchangeStreamCaptureMode(&mode));
  EXPECT_EQ(cudaStreamCaptureModeGlobal, mode);
  CUDA_OK(cudaThreadExchangeStreamCaptureMode(&mode));
  EXPECT_EQ(cudaErrorInvalidValue, cudaGraphCreate(&g, 1));  // no flags defined
  cudaGetLastError();
  CUDA_OK(cudaFree(p));
}

TEST(Graphs, GraphMemoryNodesAllocateInsideTheGraph) {
  constexpr size_t kBytes = 2048;
  char* out = nullptr;
  CUDA_OK(cudaMallocHost(&out, kBytes));
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  char* scratch = nullptr;
  CUDA_OK(cudaMallocAsync(&scratch, kBytes, s));
  ASSERT_NE(nullptr, scratch);
  CUDA_OK(cudaMemsetAsync(scratch, 0x33, kBytes, s));
  CUDA_OK(cudaMemcpyAsync(out, scratch, kBytes, cudaMemcpyDeviceToHost, s));
  CUDA_OK(cudaFreeAsync(scratch, s));
  cudaGraph_t g;
  CUDA_OK(cudaStreamEndCapture(s, &g));
  EXPECT_EQ((std::vector<cudaGraphNodeType>{cudaGraphNodeTypeMemAlloc, cudaGraphNodeTypeMemset,
                                            cudaGraphNodeTypeMemcpy, cudaGraphNodeTypeMemFree}),
            node_types(g));
  unsigned long long used = 0;
  CUDA_OK(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemCurrent, &used));
  EXPECT_EQ(kBytes, used);
  cudaGraphExec_t exec;
  CUDA_OK(cudaGraphInstantiate(&exec, g, 0));
  CUDA_OK(cudaGraphLaunch(exec, s));
  CUDA_OK(cudaStreamSynchronize(s));
  EXPECT_EQ(0x33, out[kBytes - 1]);
  CUDA_OK(cudaGraphExecDestroy(exec));
  CUDA_OK(cudaGraphDestroy(g));
  CUDA_OK(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemCurrent, &used));
  EXPECT_EQ(0u, used);
  CUDA_OK(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &used));
  EXPECT_EQ(kBytes, used);
  CUDA_OK(cudaStreamDestroy(s));
  CUDA_OK(cudaFreeHost(out));
}

TEST(Graphs, DriverApiBuildsCapturesAndLaunches) {
  CUfunction f = nullptr;
  CUDA_OK(cudaGetFuncBySymbol(&f, kernel("k_10ms")));
  CUgraph g = nullptr;
  ASSERT_EQ(CUDA_SUCCESS, cuGraphCreate(&g, 0));
  CUDA_KERNEL_NODE_PARAMS k{};
  k.func = f;
  k.gridDimX = k.gridDimY = k.gridDimZ = 1;
  k.blockDimX = 64, k.blockDimY = k.blockDimZ = 1;
  CUgraphNode node = nullptr;
  ASSERT_EQ(CUDA_SUCCESS, cuGraphAddKernelNode(&node, g, nullptr, 0, &k));
  CUDA_KERNEL_NODE_PARAMS read{};
  ASSERT_EQ(CUDA_SUCCESS, cuGraphKernelNodeGetParams(node, &read));
  EXPECT_EQ(f, read.func);
  CUstream s = nullptr;
  ASSERT_EQ(CUDA_SUCCESS, cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  // Capture a second launch of the kernel through the driver.
  ASSERT_EQ(CUDA_SUCCESS, cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  ASSERT_EQ(CUDA_SUCCESS, cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr));
  CUgraph captured = nullptr;
  ASSERT_EQ(CUDA_SUCCESS, cuStreamEndCapture(s, &captured));
  CUgraphNode child = nullptr;
  ASSERT_EQ(CUDA_SUCCESS, cuGraphAddChildGraphNode(&child, g, &node, 1, captured));
  CUgraphExec exec = nullptr;
  ASSERT_EQ(CUDA_SUCCESS, cuGraphInstantiate(&exec, g, 0));
  CUevent start, end;
  ASSERT_EQ(CUDA_SUCCESS, cuEventCreate(&start, 0));
  ASSERT_EQ(CUDA_SUCCESS, cuEventCreate(&end, 0));
  ASSERT_EQ(CUDA_SUCCESS, cuEventRecord(start, s));
  ASSERT_EQ(CUDA_SUCCESS, cuGraphLaunch(exec, s));
  ASSERT_EQ(CUDA_SUCCESS, cuEventRecord(end, s));
  ASSERT_EQ(CUDA_SUCCESS, cuStreamSynchronize(s));
  float ms = 0;
  ASSERT_EQ(CUDA_SUCCESS, cuEventElapsedTime(&ms, start, end));
  EXPECT_GE(ms, 20.0f);
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuGraphLaunch(nullptr, s));
  ASSERT_EQ(CUDA_SUCCESS, cuGraphExecDestroy(exec));
  ASSERT_EQ(CUDA_SUCCESS, cuGraphDestroy(captured));
  ASSERT_EQ(CUDA_SUCCESS, cuGraphDestroy(g));
  ASSERT_EQ(CUDA_SUCCESS, cuStreamDestroy(s));
}

}  // namespace
