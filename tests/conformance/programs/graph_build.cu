// graph_build: the same kind of work as graph_capture, built node by node.
// A graph of upload -> clear, scale -> offset -> download is assembled with
// explicit dependencies, instantiated and launched --launches times; then
// the scale kernel's parameters are changed in the executable graph
// (cudaGraphExecKernelNodeSetParams) and it is launched --launches times more.
#include "graph_kernels.h"

int main(int argc, char** argv) {
  sample::name() = "graph_build";
  const sample::Flags flags(argc, argv, {"n=", "launches="}, "[--n=FLOATS] [--launches=L]");
  int n = static_cast<int>(flags.get("n", 1 << 18));
  const int launches = static_cast<int>(flags.get("launches", 10));
  const size_t bytes = n * sizeof(float);
  std::printf("[graph_build] %d floats, %d launches per parameter set\n", n, launches);
  const bool computed = conformance::kernel_results_checkable();

  float *h_in, *h_out, *d_in, *d_out;
  checkCudaErrors(cudaMallocHost(&h_in, bytes));
  checkCudaErrors(cudaMallocHost(&h_out, bytes));
  checkCudaErrors(cudaMalloc(&d_in, bytes));
  checkCudaErrors(cudaMalloc(&d_out, bytes));
  conformance::fill(h_in, n, 9);
  cudaStream_t s;
  checkCudaErrors(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  cudaGraph_t graph;
  checkCudaErrors(cudaGraphCreate(&graph, 0));
  cudaGraphNode_t upload, clear, scale_node, offset_node, download;
  checkCudaErrors(cudaGraphAddMemcpyNode1D(&upload, graph, nullptr, 0, d_in, h_in, bytes, cudaMemcpyHostToDevice));
  cudaMemsetParams zero = {};
  zero.dst = d_out, zero.value = 0, zero.elementSize = sizeof(float), zero.width = n, zero.height = 1;
  checkCudaErrors(cudaGraphAddMemsetNode(&clear, graph, nullptr, 0, &zero));

  float factor = 2.0f, add = 1.0f;
  void* scale_args[] = {&d_in, &d_out, &factor, &n};
  cudaKernelNodeParams scale_params = {};
  scale_params.func = reinterpret_cast<void*>(scale);
  scale_params.gridDim = dim3((n + 255) / 256), scale_params.blockDim = dim3(256);
  scale_params.kernelParams = scale_args;
  const cudaGraphNode_t before_scale[] = {upload, clear};
  checkCudaErrors(cudaGraphAddKernelNode(&scale_node, graph, before_scale, 2, &scale_params));
  void* offset_args[] = {&d_out, &add, &n};
  cudaKernelNodeParams offset_params = scale_params;
  offset_params.func = reinterpret_cast<void*>(offset);
  offset_params.kernelParams = offset_args;
  checkCudaErrors(cudaGraphAddKernelNode(&offset_node, graph, &scale_node, 1, &offset_params));
  checkCudaErrors(cudaGraphAddMemcpyNode1D(&download, graph, &offset_node, 1, h_out, d_out, bytes, cudaMemcpyDeviceToHost));

  cudaGraphExec_t exec;
  checkCudaErrors(cudaGraphInstantiate(&exec, graph, 0));
  for (int l = 0; l < launches; ++l) checkCudaErrors(cudaGraphLaunch(exec, s));
  checkCudaErrors(cudaStreamSynchronize(s));
  bool ok = check_scaled(h_in, h_out, n, computed, 2.0f);

  factor = 3.0f;  // kernelParams are copied when set: the new value goes in now
  checkCudaErrors(cudaGraphExecKernelNodeSetParams(exec, scale_node, &scale_params));
  for (int l = 0; l < launches; ++l) checkCudaErrors(cudaGraphLaunch(exec, s));
  checkCudaErrors(cudaStreamSynchronize(s));
  ok = check_scaled(h_in, h_out, n, computed, 3.0f) && ok;

  checkCudaErrors(cudaGraphExecDestroy(exec));
  checkCudaErrors(cudaGraphDestroy(graph));
  checkCudaErrors(cudaStreamDestroy(s));
  checkCudaErrors(cudaFreeHost(h_in));
  checkCudaErrors(cudaFreeHost(h_out));
  checkCudaErrors(cudaFree(d_in));
  checkCudaErrors(cudaFree(d_out));
  return conformance::finish(ok);
}
