// simple_streams: the same work with and without streams.  A kernel fills
// an array and the array is copied back to pinned memory, --iters times:
// first all of it on the default stream, then split over --streams streams
// so each stream's copy overlaps the others' kernels.  Prints both times.
#include <vector>

#include "conformance.h"

__global__ void init_array(int* a, int value, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) a[i] = value;
}

int main(int argc, char** argv) {
  sample::name() = "simple_streams";
  const sample::Flags flags(argc, argv, {"n=", "streams=", "iters="}, "[--n=INTS] [--streams=S] [--iters=K]");
  const int n = static_cast<int>(flags.get("n", 4 * 1024 * 1024));
  const int nstreams = static_cast<int>(flags.get("streams", 4));
  const int iters = static_cast<int>(flags.get("iters", 5));
  if (n % nstreams != 0) {
    std::fprintf(stderr, "simple_streams: --n must be a multiple of --streams\n");
    return EXIT_FAILURE;
  }
  const size_t bytes = n * sizeof(int);
  const int chunk = n / nstreams;
  const int value = 5;
  std::printf("[simple_streams] %d ints, %d streams, %d iterations\n", n, nstreams, iters);

  int* a = nullptr;
  int* d_a = nullptr;
  checkCudaErrors(cudaMallocHost(&a, bytes));
  checkCudaErrors(cudaMalloc(&d_a, bytes));
  conformance::fill(a, n, 3);
  std::vector<int> uploaded(a, a + n);
  checkCudaErrors(cudaMemcpy(d_a, a, bytes, cudaMemcpyHostToDevice));

  std::vector<cudaStream_t> streams(nstreams);
  for (auto& s : streams) checkCudaErrors(cudaStreamCreate(&s));
  conformance::EventTimer timer;
  const dim3 threads(512), blocks(n / (4 * threads.x)), chunk_blocks(chunk / (4 * threads.x) + 1);

  timer.start();
  checkCudaErrors(cudaMemcpyAsync(a, d_a, bytes, cudaMemcpyDeviceToHost, streams[0]));
  std::printf("memcopy:\t%.2f ms\n", timer.stop_ms(streams[0]));

  timer.start();
  init_array<<<blocks, threads, 0, streams[0]>>>(d_a, value, n);
  getLastCudaError("init_array");
  std::printf("kernel:\t\t%.2f ms\n", timer.stop_ms(streams[0]));

  timer.start();
  for (int k = 0; k < iters; ++k) {
    init_array<<<blocks, threads>>>(d_a, value, n);
    checkCudaErrors(cudaMemcpyAsync(a, d_a, bytes, cudaMemcpyDeviceToHost));
  }
  std::printf("non-streamed:\t%.2f ms\n", timer.stop_ms() / iters);

  timer.start();
  for (int k = 0; k < iters; ++k) {
    for (int i = 0; i < nstreams; ++i) init_array<<<chunk_blocks, threads, 0, streams[i]>>>(d_a + i * chunk, value, chunk);
    for (int i = 0; i < nstreams; ++i)
      checkCudaErrors(cudaMemcpyAsync(a + i * chunk, d_a + i * chunk, chunk * sizeof(int), cudaMemcpyDeviceToHost, streams[i]));
  }
  std::printf("%d streams:\t%.2f ms\n", nstreams, timer.stop_ms() / iters);

  // Kernels that did not run leave the uploaded data for the copies to bring back.
  const bool computed = conformance::kernel_results_checkable();
  bool ok = true;
  for (int i = 0; i < n && ok; ++i)
    if (a[i] != (computed ? value : uploaded[i])) {
      std::fprintf(stderr, "simple_streams: element %d is %d\n", i, a[i]);
      ok = false;
    }

  for (auto& s : streams) checkCudaErrors(cudaStreamDestroy(s));
  timer.release();
  checkCudaErrors(cudaFreeHost(a));
  checkCudaErrors(cudaFree(d_a));
  return conformance::finish(ok);
}
