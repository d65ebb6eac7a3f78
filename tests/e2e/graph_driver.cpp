// A driver-API program with CUDA graphs, as frameworks that JIT their
// kernels write it: a module from PTX, an eager launch, a stream capture of
// kernels and a memset, graph launches. Like graph_work.cu it prints
// "call NAME RESULT" for every CUDA call and "ran K C M" after each graph
// launch that succeeded (the kernels, copies and memsets it captured).
//   graph_driver N   N launches of the captured graph
#include <cuda.h>

#include <cstdio>
#include <cstdlib>

#include "call_report.h"

namespace {

// One empty kernel; PTX any driver JIT-compiles (and simgpu reads).
constexpr char kPtx[] =
    ".version 8.0\n"
    ".target sm_75\n"
    ".address_size 64\n"
    ".visible .entry tick()\n"
    "{\n"
    "\tret;\n"
    "}\n";


void launch_tick(CUfunction f, CUstream s) { CALL(cuLaunchKernel, f, 1, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr); }

}  // namespace

int main(int argc, char** argv) {
  const int launches = argc > 1 ? std::atoi(argv[1]) : 4;
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  CUmodule module = nullptr;
  CUfunction tick = nullptr;
  if (CALL(cuInit, 0u) != CUDA_SUCCESS || CALL(cuDeviceGet, &dev, 0) != CUDA_SUCCESS ||
      CALL(cuDevicePrimaryCtxRetain, &ctx, dev) != CUDA_SUCCESS || CALL(cuCtxSetCurrent, ctx) != CUDA_SUCCESS ||
      CALL(cuModuleLoadData, &module, kPtx) != CUDA_SUCCESS || CALL(cuModuleGetFunction, &tick, module, "tick") != 0)
    return 1;
  CUstream s = nullptr;
  CUdeviceptr buffer = 0;
  CALL(cuStreamCreate, &s, 0u);
  CALL(cuMemAlloc, &buffer, size_t{1} << 16);
  launch_tick(tick, s);  // runs now
  CUgraph g = nullptr;
  if (CALL(cuStreamBeginCapture, s, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS) {
    for (int k = 0; k < 2; ++k) launch_tick(tick, s);
    CALL(cuMemsetD8Async, buffer, 0, size_t{1} << 16, s);
    CALL(cuStreamEndCapture, s, &g);
  }
  CUgraphExec exec = nullptr;
  if (g != nullptr && CALL(cuGraphInstantiate, &exec, g, 0ull) == CUDA_SUCCESS)
    for (int i = 0; i < launches; ++i)
      if (CALL(cuGraphLaunch, exec, s) == CUDA_SUCCESS) report_graph_run(2, 0, 1);
  CALL(cuStreamSynchronize, s);
  if (exec != nullptr) CALL(cuGraphExecDestroy, exec);
  if (g != nullptr) CALL(cuGraphDestroy, g);
  CALL(cuMemFree, buffer);
  CALL(cuStreamDestroy, s);
  CALL(cuModuleUnload, module);
  CALL(cuDevicePrimaryCtxRelease, dev);
  return 0;
}
