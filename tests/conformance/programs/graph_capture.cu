// graph_capture: record a stream's work once as a CUDA graph and replay it.
// An upload, two kernels and a download are captured from a stream,
// instantiated and launched --launches times; then the work is captured
// again with another factor and the executable graph is updated in place
// (cudaGraphExecUpdate) and launched --launches times more.
#include "graph_work.h"

cudaGraph_t capture(GraphBuffers& b, float factor) {
  cudaGraph_t graph;
  checkCudaErrors(cudaStreamBeginCapture(b.stream, cudaStreamCaptureModeGlobal));
  checkCudaErrors(cudaMemcpyAsync(b.d_in, b.h_in, b.bytes, cudaMemcpyHostToDevice, b.stream));
  scale<<<(b.n + 255) / 256, 256, 0, b.stream>>>(b.d_in, b.d_out, factor, b.n);
  offset<<<(b.n + 255) / 256, 256, 0, b.stream>>>(b.d_out, 1.0f, b.n);
  checkCudaErrors(cudaMemcpyAsync(b.h_out, b.d_out, b.bytes, cudaMemcpyDeviceToHost, b.stream));
  checkCudaErrors(cudaStreamEndCapture(b.stream, &graph));
  return graph;
}

int main(int argc, char** argv) {
  sample::name() = "graph_capture";
  const sample::Flags flags(argc, argv, {"n=", "launches="}, "[--n=FLOATS] [--launches=L]");
  const int n = static_cast<int>(flags.get("n", 1 << 18));
  const int launches = static_cast<int>(flags.get("launches", 10));
  std::printf("[graph_capture] %d floats, %d launches per graph version\n", n, launches);
  const bool computed = conformance::kernel_results_checkable();
  GraphBuffers b(n, 8);
  checkCudaErrors(cudaMemset(b.d_out, 0, b.bytes));

  cudaGraph_t graph = capture(b, 2.0f);
  size_t nodes = 0;
  checkCudaErrors(cudaGraphGetNodes(graph, nullptr, &nodes));
  std::printf("captured a graph of %zu nodes\n", nodes);
  cudaGraphExec_t exec;
  checkCudaErrors(cudaGraphInstantiate(&exec, graph, 0));
  bool ok = b.launch_and_check(exec, launches, computed, 2.0f);

  cudaGraph_t graph3 = capture(b, 3.0f);
  cudaGraphExecUpdateResultInfo info;
  checkCudaErrors(cudaGraphExecUpdate(exec, graph3, &info));
  std::printf("executable graph updated in place: %s\n", info.result == cudaGraphExecUpdateSuccess ? "yes" : "no");
  ok = b.launch_and_check(exec, launches, computed, 3.0f) && ok;

  checkCudaErrors(cudaGraphExecDestroy(exec));
  checkCudaErrors(cudaGraphDestroy(graph));
  checkCudaErrors(cudaGraphDestroy(graph3));
  b.release();
  return conformance::finish(ok);
}
