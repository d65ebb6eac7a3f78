// omp_streams: OpenMP host threads, each driving its own stream on one of
// the GPUs (round robin).  The array is split into --chunks parts; each
// part is uploaded, has a constant added and comes back, on the stream its
// OpenMP thread created.
#include <omp.h>

#include <vector>

#include "conformance.h"

__global__ void add_constant(int* data, int n, int b) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += b;
}

int main(int argc, char** argv) {
  sample::name() = "omp_streams";
  const sample::Flags flags(argc, argv, {"chunks=", "n="}, "[--chunks=C] [--n=INTS per chunk]");
  const int chunks = static_cast<int>(flags.get("chunks", 4));
  const int n = static_cast<int>(flags.get("n", 1 << 18));
  const int b = 3;
  int gpus = 0;
  checkCudaErrors(cudaGetDeviceCount(&gpus));
  std::printf("[omp_streams] %d GPU(s), %d chunks of %d ints\n", gpus, chunks, n);

  std::vector<int> data(size_t(chunks) * n), original;
  conformance::fill(data.data(), data.size(), 7);
  original = data;

#pragma omp parallel for num_threads(chunks) schedule(static, 1)
  for (int c = 0; c < chunks; ++c) {
    int* part = data.data() + size_t(c) * n;
    int* d = nullptr;
    cudaStream_t stream;
    checkCudaErrors(cudaSetDevice(c % gpus));
    checkCudaErrors(cudaStreamCreate(&stream));
    checkCudaErrors(cudaMalloc(&d, n * sizeof(int)));
    checkCudaErrors(cudaMemcpyAsync(d, part, n * sizeof(int), cudaMemcpyHostToDevice, stream));
    add_constant<<<(n + 127) / 128, 128, 0, stream>>>(d, n, b);
    getLastCudaError("add_constant");
    checkCudaErrors(cudaMemcpyAsync(part, d, n * sizeof(int), cudaMemcpyDeviceToHost, stream));
    checkCudaErrors(cudaStreamSynchronize(stream));
    checkCudaErrors(cudaFree(d));
    checkCudaErrors(cudaStreamDestroy(stream));
  }

  checkCudaErrors(cudaSetDevice(0));
  const int added = conformance::kernel_results_checkable() ? b : 0;
  bool ok = true;
  for (size_t i = 0; i < data.size() && ok; ++i)
    if (data[i] != original[i] + added) {
      std::fprintf(stderr, "omp_streams: element %zu is %d, expected %d\n", i, data[i], original[i] + added);
      ok = false;
    }
  return conformance::finish(ok);
}
