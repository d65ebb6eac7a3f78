// stream_callbacks: the host learns from the stream itself that work is
// done.  Each of --workers streams uploads its data, runs a kernel and
// downloads the result, then queues a cudaStreamAddCallback that checks
// the worker's data and a cudaLaunchHostFunc that counts; the main thread
// only waits for the device at the end and reads what the callbacks found.
#include <atomic>
#include <vector>

#include "conformance.h"

namespace {

struct Worker {
  int id;
  int n;
  int* host;
  int* device;
  cudaStream_t stream;
  int expected_add;                  // what the kernel adds where it runs
  std::atomic<int> callback_status;  // -1 until the callback ran, then 0 (good) or 1
};

std::atomic<int> host_functions_done{0};

__global__ void add_id(int* data, int n, int id) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += id;
}

// Runs on a runtime thread once the stream reached it; makes no CUDA call.
void CUDART_CB check_worker(cudaStream_t, cudaError_t status, void* user) {
  auto* w = static_cast<Worker*>(user);
  bool good = status == cudaSuccess;
  for (int i = 0; i < w->n && good; ++i) good = w->host[i] == i + w->expected_add;
  w->callback_status = good ? 0 : 1;
}

void CUDART_CB count_done(void*) { ++host_functions_done; }

}  // namespace

int main(int argc, char** argv) {
  sample::name() = "stream_callbacks";
  const sample::Flags flags(argc, argv, {"workers=", "n="}, "[--workers=W] [--n=INTS]");
  const int nworkers = static_cast<int>(flags.get("workers", 4));
  const int n = static_cast<int>(flags.get("n", 1 << 18));
  const size_t bytes = n * sizeof(int);
  std::printf("[stream_callbacks] %d workers, %d ints each\n", nworkers, n);
  const bool computed = conformance::kernel_results_checkable();

  std::vector<Worker> workers(nworkers);
  for (int w = 0; w < nworkers; ++w) {
    Worker& k = workers[w];
    k.id = w, k.n = n, k.expected_add = computed ? w : 0, k.callback_status = -1;
    checkCudaErrors(cudaMallocHost(&k.host, bytes));
    checkCudaErrors(cudaMalloc(&k.device, bytes));
    checkCudaErrors(cudaStreamCreate(&k.stream));
    for (int i = 0; i < n; ++i) k.host[i] = i;
  }
  for (Worker& k : workers) {
    checkCudaErrors(cudaMemcpyAsync(k.device, k.host, bytes, cudaMemcpyHostToDevice, k.stream));
    add_id<<<(n + 255) / 256, 256, 0, k.stream>>>(k.device, n, k.id);
    checkCudaErrors(cudaMemcpyAsync(k.host, k.device, bytes, cudaMemcpyDeviceToHost, k.stream));
    checkCudaErrors(cudaStreamAddCallback(k.stream, check_worker, &k, 0));
    checkCudaErrors(cudaLaunchHostFunc(k.stream, count_done, nullptr));
  }
  checkCudaErrors(cudaDeviceSynchronize());

  bool ok = host_functions_done == nworkers;
  int checked = 0;
  for (Worker& k : workers) {
    checked += k.callback_status == 0;
    if (k.callback_status != 0) std::fprintf(stderr, "stream_callbacks: worker %d: callback status %d\n", k.id, k.callback_status.load());
  }
  ok = ok && checked == nworkers;
  std::printf("%d callbacks checked their worker's data, %d host functions ran\n", checked, host_functions_done.load());

  for (Worker& k : workers) {
    checkCudaErrors(cudaStreamDestroy(k.stream));
    checkCudaErrors(cudaFreeHost(k.host));
    checkCudaErrors(cudaFree(k.device));
  }
  return conformance::finish(ok);
}
