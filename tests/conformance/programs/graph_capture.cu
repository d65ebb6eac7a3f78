// graph_capture: record a stream's work once as a CUDA graph and replay it.
// An upload, two kernels and a download are captured from a stream,
// instantiated and launched --launches times; then the work is captured
// again with another factor and the executable graph is updated in place
// (cudaGraphExecUpdate) and launched --launches times more.
#include "graph_kernels.h"

cudaGraph_t capture(cudaStream_t s, float* d_in, float* d_out, const float* h_in, float* h_out, int n, float factor) {
  const size_t bytes = n * sizeof(float);
  cudaGraph_t graph;
  checkCudaErrors(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  checkCudaErrors(cudaMemcpyAsync(d_in, h_in, bytes, cudaMemcpyHostToDevice, s));
  scale<<<(n + 255) / 256, 256, 0, s>>>(d_in, d_out, factor, n);
  offset<<<(n + 255) / 256, 256, 0, s>>>(d_out, 1.0f, n);
  checkCudaErrors(cudaMemcpyAsync(h_out, d_out, bytes, cudaMemcpyDeviceToHost, s));
  checkCudaErrors(cudaStreamEndCapture(s, &graph));
  return graph;
}

int main(int argc, char** argv) {
  sample::name() = "graph_capture";
  const sample::Flags flags(argc, argv, {"n=", "launches="}, "[--n=FLOATS] [--launches=L]");
  const int n = static_cast<int>(flags.get("n", 1 << 18));
  const int launches = static_cast<int>(flags.get("launches", 10));
  const size_t bytes = n * sizeof(float);
  std::printf("[graph_capture] %d floats, %d launches per graph version\n", n, launches);
  const bool computed = conformance::kernel_results_checkable();

  float *h_in, *h_out, *d_in, *d_out;
  checkCudaErrors(cudaMallocHost(&h_in, bytes));
  checkCudaErrors(cudaMallocHost(&h_out, bytes));
  checkCudaErrors(cudaMalloc(&d_in, bytes));
  checkCudaErrors(cudaMalloc(&d_out, bytes));
  conformance::fill(h_in, n, 8);
  checkCudaErrors(cudaMemset(d_out, 0, bytes));
  cudaStream_t s;
  checkCudaErrors(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  cudaGraph_t graph = capture(s, d_in, d_out, h_in, h_out, n, 2.0f);
  size_t nodes = 0;
  checkCudaErrors(cudaGraphGetNodes(graph, nullptr, &nodes));
  std::printf("captured a graph of %zu nodes\n", nodes);
  cudaGraphExec_t exec;
  checkCudaErrors(cudaGraphInstantiate(&exec, graph, 0));
  for (int l = 0; l < launches; ++l) checkCudaErrors(cudaGraphLaunch(exec, s));
  checkCudaErrors(cudaStreamSynchronize(s));
  bool ok = check_scaled(h_in, h_out, n, computed, 2.0f);

  cudaGraph_t graph3 = capture(s, d_in, d_out, h_in, h_out, n, 3.0f);
  cudaGraphExecUpdateResultInfo info;
  checkCudaErrors(cudaGraphExecUpdate(exec, graph3, &info));
  std::printf("executable graph updated in place: %s\n", info.result == cudaGraphExecUpdateSuccess ? "yes" : "no");
  for (int l = 0; l < launches; ++l) checkCudaErrors(cudaGraphLaunch(exec, s));
  checkCudaErrors(cudaStreamSynchronize(s));
  ok = check_scaled(h_in, h_out, n, computed, 3.0f) && ok;

  checkCudaErrors(cudaGraphExecDestroy(exec));
  checkCudaErrors(cudaGraphDestroy(graph));
  checkCudaErrors(cudaGraphDestroy(graph3));
  checkCudaErrors(cudaStreamDestroy(s));
  checkCudaErrors(cudaFreeHost(h_in));
  checkCudaErrors(cudaFreeHost(h_out));
  checkCudaErrors(cudaFree(d_in));
  checkCudaErrors(cudaFree(d_out));
  return conformance::finish(ok);
}
