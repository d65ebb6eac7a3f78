// A CUDA program (runtime API) that builds, captures, instantiates, updates
// and launches graphs, and calls the rest of what real programs call beyond
// copies and launches (callbacks, host functions, occupancy, peer access,
// pools, managed memory). tests/e2e/test_graphs.cpp runs it under gpuscope
// and compares the trace with what it did.
//
// Every CUDA call it makes prints one line "call NAME RESULT", so the test
// knows each result the program saw (on simgpu, a real GPU, or a runtime
// that refuses) without assuming any. Failures do not stop it: a failing
// call is evidence the trace must hold.
// After each graph launch that succeeded it prints "ran K C M": the kernels,
// copies and memsets it put into that graph.
//   graph_work capture N   an eager kernel, then a capture of 3 kernels, a memset
//                          and a device-to-device copy; N launches of the graph
//   graph_work build N     explicit nodes: 2 kernels, a memset, a child graph of
//                          1 kernel; N launches; an exec update from a graph of
//                          the same shape, N launches; an update from a graph
//                          of 4 kernels (refused: other nodes), so a new exec,
//                          N launches
//   graph_work errors      graph calls that must fail (invalid flags, null graph)
//   graph_work apis        callbacks, host functions, occupancy, peer access,
//                          pools, prefetch and advice
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "call_report.h"

namespace {

__global__ void step(float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 0.5f + 1.0f;
}


// What the launches just made left in the thread's last error.
void check_launches(const char* which) { std::printf("launches %s %d\n", which, static_cast<int>(cudaGetLastError())); }

constexpr int kElements = 1024;

void launch_step(float* d, cudaStream_t s) { step<<<kElements / 256, 256, 0, s>>>(d, kElements); }

void launch_graph(cudaGraphExec_t exec, cudaStream_t s, int launches, int kernels, int copies, int memsets) {
  for (int i = 0; i < launches; ++i)
    if (CALL(cudaGraphLaunch, exec, s) == cudaSuccess) report_graph_run(kernels, copies, memsets);
}

int capture(int launches) {
  float* d = nullptr;
  float* e = nullptr;
  cudaStream_t s = nullptr;
  CALL(cudaMalloc, reinterpret_cast<void**>(&d), kElements * sizeof(float));
  CALL(cudaMalloc, reinterpret_cast<void**>(&e), kElements * sizeof(float));
  CALL(cudaStreamCreateWithFlags, &s, cudaStreamNonBlocking);
  launch_step(d, s);  // runs now
  check_launches("eager");
  cudaGraph_t g = nullptr;
  if (CALL(cudaStreamBeginCapture, s, cudaStreamCaptureModeGlobal) == cudaSuccess) {
    for (int k = 0; k < 3; ++k) launch_step(d, s);
    check_launches("captured");
    CALL(cudaMemsetAsync, e, 0, kElements * sizeof(float), s);
    CALL(cudaMemcpyAsync, e, d, kElements * sizeof(float), cudaMemcpyDeviceToDevice, s);
    CALL(cudaStreamEndCapture, s, &g);
  }
  cudaGraphExec_t exec = nullptr;
  if (g != nullptr && CALL(cudaGraphInstantiate, &exec, g, 0ull) == cudaSuccess)
    launch_graph(exec, s, launches, 3, 1, 1);
  CALL(cudaStreamSynchronize, s);
  if (exec != nullptr) CALL(cudaGraphExecDestroy, exec);
  if (g != nullptr) CALL(cudaGraphDestroy, g);
  CALL(cudaStreamDestroy, s);
  CALL(cudaFree, d);
  CALL(cudaFree, e);
  return 0;
}

cudaKernelNodeParams step_node(float** d) {
  static int n = kElements;
  static void* args[2];
  args[0] = d;
  args[1] = &n;
  cudaKernelNodeParams p{};
  p.func = reinterpret_cast<void*>(step);
  p.gridDim = dim3(kElements / 256);
  p.blockDim = dim3(256);
  p.kernelParams = args;
  return p;
}

// `kernels` kernel nodes in a chain, plus (when `extras`) a memset node and a
// child graph holding one kernel.
cudaGraph_t build_graph(float** d, int kernels, bool extras) {
  cudaGraph_t g = nullptr;
  if (CALL(cudaGraphCreate, &g, 0u) != cudaSuccess) return nullptr;
  const cudaKernelNodeParams p = step_node(d);
  cudaGraphNode_t last = nullptr;
  for (int k = 0; k < kernels; ++k) {
    cudaGraphNode_t node = nullptr;
    CALL(cudaGraphAddKernelNode, &node, g, last ? &last : nullptr, last ? 1 : 0, &p);
    last = node;
  }
  if (!extras) return g;
  cudaMemsetParams m{};
  m.dst = *d;
  m.elementSize = 1;
  m.width = kElements;
  m.height = 1;
  cudaGraphNode_t memset_node = nullptr;
  CALL(cudaGraphAddMemsetNode, &memset_node, g, &last, 1, &m);
  cudaGraph_t child = nullptr;
  CALL(cudaGraphCreate, &child, 0u);
  cudaGraphNode_t child_kernel = nullptr, child_node = nullptr;
  CALL(cudaGraphAddKernelNode, &child_kernel, child, nullptr, 0, &p);
  CALL(cudaGraphAddChildGraphNode, &child_node, g, &memset_node, 1, child);
  CALL(cudaGraphDestroy, child);  // the parent holds a copy
  return g;
}

int build(int launches) {
  static float* d = nullptr;
  cudaStream_t s = nullptr;
  CALL(cudaMalloc, reinterpret_cast<void**>(&d), kElements * sizeof(float));
  CALL(cudaStreamCreate, &s);
  cudaGraph_t g = build_graph(&d, 2, true);
  cudaGraph_t same = build_graph(&d, 2, true);
  cudaGraph_t other = build_graph(&d, 4, false);
  cudaGraphExec_t exec = nullptr;
  if (g != nullptr && CALL(cudaGraphInstantiateWithFlags, &exec, g, 0ull) == cudaSuccess) {
    launch_graph(exec, s, launches, 3, 0, 1);
    cudaGraphExecUpdateResultInfo info{};
    if (same != nullptr && CALL(cudaGraphExecUpdate, exec, same, &info) == cudaSuccess)
      launch_graph(exec, s, launches, 3, 0, 1);
    if (other != nullptr && CALL(cudaGraphExecUpdate, exec, other, &info) != cudaSuccess) {
      CALL(cudaGraphExecDestroy, exec);
      exec = nullptr;
      if (CALL(cudaGraphInstantiate, &exec, other, 0ull) == cudaSuccess) launch_graph(exec, s, launches, 4, 0, 0);
    }
  }
  CALL(cudaStreamSynchronize, s);
  if (exec != nullptr) CALL(cudaGraphExecDestroy, exec);
  for (cudaGraph_t graph : {g, same, other})
    if (graph != nullptr) CALL(cudaGraphDestroy, graph);
  CALL(cudaStreamDestroy, s);
  CALL(cudaFree, d);
  return 0;
}

int errors() {
  cudaGraph_t g = nullptr;
  CALL(cudaGraphCreate, &g, 1u);  // flags must be 0
  cudaGraphExec_t exec = nullptr;
  CALL(cudaGraphInstantiate, &exec, nullptr, 0ull);
  CALL(cudaStreamBeginCapture, nullptr, cudaStreamCaptureModeGlobal);  // the legacy stream cannot capture
  return 0;
}

void CUDART_CB on_host(void* counter) { ++*static_cast<int*>(counter); }
void CUDART_CB on_callback(cudaStream_t, cudaError_t, void* counter) { ++*static_cast<int*>(counter); }

int apis() {
  cudaStream_t s = nullptr;
  CALL(cudaStreamCreate, &s);
  static int host_calls = 0;
  CALL(cudaStreamAddCallback, s, on_callback, &host_calls, 0u);
  CALL(cudaLaunchHostFunc, s, on_host, &host_calls);
  int blocks = 0;
  CALL(cudaOccupancyMaxActiveBlocksPerMultiprocessor, &blocks, reinterpret_cast<const void*>(step), 256, size_t{0});
  int can = 0, devices = 0;
  CALL(cudaGetDeviceCount, &devices);
  CALL(cudaDeviceCanAccessPeer, &can, 0, 1);
  if (can) {
    CALL(cudaDeviceEnablePeerAccess, 1, 0u);
    CALL(cudaDeviceDisablePeerAccess, 1);
  }
  cudaMemPool_t pool = nullptr;
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 0;
  if (CALL(cudaMemPoolCreate, &pool, &props) == cudaSuccess) {
    void* p = nullptr;
    CALL(cudaMallocFromPoolAsync, &p, size_t{1} << 20, pool, s);
    CALL(cudaFreeAsync, p, s);
    CALL(cudaStreamSynchronize, s);
    CALL(cudaMemPoolTrimTo, pool, size_t{0});
    CALL(cudaMemPoolDestroy, pool);
  }
  float* managed = nullptr;
  constexpr size_t kManaged = size_t{4} << 20;
  if (CALL(cudaMallocManaged, reinterpret_cast<void**>(&managed), kManaged, unsigned{cudaMemAttachGlobal}) ==
      cudaSuccess) {
    cudaMemLocation device{cudaMemLocationTypeDevice, 0}, host{cudaMemLocationTypeHost, 0};
    CALL(cudaMemAdvise, managed, kManaged, cudaMemAdviseSetPreferredLocation, device);
    CALL(cudaMemPrefetchAsync, managed, kManaged, device, 0u, s);
    CALL(cudaMemPrefetchAsync, managed, kManaged / 2, host, 0u, s);
    CALL(cudaStreamSynchronize, s);
    CALL(cudaFree, managed);
  }
  CALL(cudaStreamSynchronize, s);
  std::printf("host functions ran %d times\n", host_calls);
  CALL(cudaStreamDestroy, s);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  const int launches = argc > 2 ? std::atoi(argv[2]) : 4;
  if (std::strcmp(mode, "capture") == 0) return capture(launches);
  if (std::strcmp(mode, "build") == 0) return build(launches);
  if (std::strcmp(mode, "errors") == 0) return errors();
  if (std::strcmp(mode, "apis") == 0) return apis();
  std::fprintf(stderr, "usage: graph_work capture|build [LAUNCHES] | errors | apis\n");
  return 2;
}
