// async_api: the CPU keeps working while the GPU does.  A copy up from
// pinned memory, a kernel and a copy back are queued on the default stream
// between two events, then the host polls the second event with
// cudaEventQuery until the work is done, counting its polls.
#include "conformance.h"

__global__ void increment_kernel(int* data, int inc) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  data[i] += inc;
}

int main(int argc, char** argv) {
  sample::name() = "async_api";
  const sample::Flags flags(argc, argv, {"n="}, "[--n=ELEMENTS (a multiple of 512)]");
  const int n = static_cast<int>(flags.get("n", 16 * 1024 * 1024));
  const size_t bytes = n * sizeof(int);
  const int value = 26;
  std::printf("[async_api] %d ints, increment by %d\n", n, value);

  int* host = nullptr;
  int* device = nullptr;
  checkCudaErrors(cudaMallocHost(&host, bytes));
  for (int i = 0; i < n; ++i) host[i] = i;
  checkCudaErrors(cudaMalloc(&device, bytes));
  checkCudaErrors(cudaMemset(device, 255, bytes));

  cudaEvent_t start, stop;
  checkCudaErrors(cudaEventCreate(&start));
  checkCudaErrors(cudaEventCreate(&stop));
  checkCudaErrors(cudaDeviceSynchronize());

  const dim3 threads(512), blocks(n / threads.x);
  checkCudaErrors(cudaEventRecord(start, 0));
  checkCudaErrors(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, 0));
  increment_kernel<<<blocks, threads, 0, 0>>>(device, value);
  checkCudaErrors(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, 0));
  checkCudaErrors(cudaEventRecord(stop, 0));

  // Host work while the GPU is busy: count the polls until the event is done.
  unsigned long polls = 0;
  cudaError_t state;
  while ((state = cudaEventQuery(stop)) == cudaErrorNotReady) ++polls;
  checkCudaErrors(state);

  float gpu_ms = 0;
  checkCudaErrors(cudaEventElapsedTime(&gpu_ms, start, stop));
  std::printf("time spent executing by the GPU: %.2f ms\n", gpu_ms);
  std::printf("CPU executed %lu polls while waiting for the GPU\n", polls);

  const int added = conformance::kernel_results_checkable() ? value : 0;
  bool ok = true;
  for (int i = 0; i < n && ok; ++i)
    if (host[i] != i + added) {
      std::fprintf(stderr, "async_api: element %d is %d, expected %d\n", i, host[i], i + added);
      ok = false;
    }

  checkCudaErrors(cudaEventDestroy(start));
  checkCudaErrors(cudaEventDestroy(stop));
  checkCudaErrors(cudaFreeHost(host));
  checkCudaErrors(cudaFree(device));
  return conformance::finish(ok);
}
