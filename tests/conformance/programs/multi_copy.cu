// multi_copy: keep both copy engines and the compute engine busy.  Four
// sets of pinned input/output buffers rotate over four streams; each step
// uploads one input, clears and computes its output, and downloads it,
// while the other streams' steps are in flight.  Prints the throughput.
#include <vector>

#include "conformance.h"

constexpr int kSets = 4;

__global__ void inc_kernel(int* out, const int* in, int n, int reps) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int v = in[i];
  for (int r = 0; r < reps; ++r) v += 1;
  out[i] = v;
}

int main(int argc, char** argv) {
  sample::name() = "multi_copy";
  const sample::Flags flags(argc, argv, {"n=", "steps=", "reps="}, "[--n=INTS] [--steps=K] [--reps=R]");
  const int n = static_cast<int>(flags.get("n", 1 << 20));
  const int steps = static_cast<int>(flags.get("steps", 12));
  const int reps = static_cast<int>(flags.get("reps", 10));
  const size_t bytes = n * sizeof(int);
  std::printf("[multi_copy] %d buffer sets of %d ints, %d steps\n", kSets, n, steps);

  int *h_in[kSets], *h_out[kSets], *d_in[kSets], *d_out[kSets];
  cudaStream_t stream[kSets];
  for (int s = 0; s < kSets; ++s) {
    checkCudaErrors(cudaMallocHost(&h_in[s], bytes));
    checkCudaErrors(cudaMallocHost(&h_out[s], bytes));
    checkCudaErrors(cudaMalloc(&d_in[s], bytes));
    checkCudaErrors(cudaMalloc(&d_out[s], bytes));
    checkCudaErrors(cudaStreamCreate(&stream[s]));
    conformance::fill(h_in[s], n, s);
  }
  conformance::EventTimer timer;

  const dim3 threads(256), blocks((n + 255) / 256);
  timer.start();
  for (int k = 0; k < steps; ++k) {
    const int s = k % kSets;
    checkCudaErrors(cudaMemcpyAsync(d_in[s], h_in[s], bytes, cudaMemcpyHostToDevice, stream[s]));
    checkCudaErrors(cudaMemsetAsync(d_out[s], 0, bytes, stream[s]));
    inc_kernel<<<blocks, threads, 0, stream[s]>>>(d_out[s], d_in[s], n, reps);
    checkCudaErrors(cudaMemcpyAsync(h_out[s], d_out[s], bytes, cudaMemcpyDeviceToHost, stream[s]));
  }
  const float ms = timer.stop_ms();
  std::printf("%d steps in %.3f ms: %.2f GB/s moved\n", steps, ms, 2.0 * bytes * steps / (ms * 1e6));

  // An output holds in + reps where the kernel ran, else the memset's zeros.
  const bool computed = conformance::kernel_results_checkable();
  bool ok = true;
  for (int s = 0; s < kSets && s < steps; ++s)
    for (int i = 0; i < n && ok; ++i)
      if (h_out[s][i] != (computed ? h_in[s][i] + reps : 0)) {
        std::fprintf(stderr, "multi_copy: set %d element %d is %d\n", s, i, h_out[s][i]);
        ok = false;
      }

  for (int s = 0; s < kSets; ++s) {
    checkCudaErrors(cudaStreamDestroy(stream[s]));
    checkCudaErrors(cudaFreeHost(h_in[s]));
    checkCudaErrors(cudaFreeHost(h_out[s]));
    checkCudaErrors(cudaFree(d_in[s]));
    checkCudaErrors(cudaFree(d_out[s]));
  }
  timer.release();
  return conformance::finish(ok);
}
