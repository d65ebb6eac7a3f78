// graph_build: the same kind of work as graph_capture, built node by node.
// A graph of upload -> clear, scale -> offset -> download is assembled with
// explicit dependencies, instantiated and launched --launches times; then
// the scale kernel's parameters are changed in the executable graph
// (cudaGraphExecKernelNodeSetParams) and it is launched --launches times more.
#include "graph_work.h"

int main(int argc, char** argv) {
  sample::name() = "graph_build";
  const sample::Flags flags(argc, argv, {"n=", "launches="}, "[--n=FLOATS] [--launches=L]");
  int n = static_cast<int>(flags.get("n", 1 << 18));
  const int launches = static_cast<int>(flags.get("launches", 10));
  std::printf("[graph_build] %d floats, %d launches per parameter set\n", n, launches);
  const bool computed = conformance::kernel_results_checkable();
  GraphBuffers b(n, 9);

  cudaGraph_t graph;
  checkCudaErrors(cudaGraphCreate(&graph, 0));
  cudaGraphNode_t upload, clear, scale_node, offset_node, download;
  checkCudaErrors(cudaGraphAddMemcpyNode1D(&upload, graph, nullptr, 0, b.d_in, b.h_in, b.bytes, cudaMemcpyHostToDevice));
  cudaMemsetParams zero = {};
  zero.dst = b.d_out, zero.value = 0, zero.elementSize = sizeof(float), zero.width = n, zero.height = 1;
  checkCudaErrors(cudaGraphAddMemsetNode(&clear, graph, nullptr, 0, &zero));

  float factor = 2.0f, add = 1.0f;
  void* scale_args[] = {&b.d_in, &b.d_out, &factor, &n};
  cudaKernelNodeParams scale_params = {};
  scale_params.func = reinterpret_cast<void*>(scale);
  scale_params.gridDim = dim3((n + 255) / 256), scale_params.blockDim = dim3(256);
  scale_params.kernelParams = scale_args;
  const cudaGraphNode_t before_scale[] = {upload, clear};
  checkCudaErrors(cudaGraphAddKernelNode(&scale_node, graph, before_scale, 2, &scale_params));
  void* offset_args[] = {&b.d_out, &add, &n};
  cudaKernelNodeParams offset_params = scale_params;
  offset_params.func = reinterpret_cast<void*>(offset);
  offset_params.kernelParams = offset_args;
  checkCudaErrors(cudaGraphAddKernelNode(&offset_node, graph, &scale_node, 1, &offset_params));
  checkCudaErrors(cudaGraphAddMemcpyNode1D(&download, graph, &offset_node, 1, b.h_out, b.d_out, b.bytes, cudaMemcpyDeviceToHost));

  cudaGraphExec_t exec;
  checkCudaErrors(cudaGraphInstantiate(&exec, graph, 0));
  bool ok = b.launch_and_check(exec, launches, computed, 2.0f);

  factor = 3.0f;  // kernelParams are copied when set: the new value goes in now
  checkCudaErrors(cudaGraphExecKernelNodeSetParams(exec, scale_node, &scale_params));
  ok = b.launch_and_check(exec, launches, computed, 3.0f) && ok;

  checkCudaErrors(cudaGraphExecDestroy(exec));
  checkCudaErrors(cudaGraphDestroy(graph));
  b.release();
  return conformance::finish(ok);
}
