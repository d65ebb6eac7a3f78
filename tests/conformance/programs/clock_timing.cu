// clock_timing: time a kernel from inside with clock().  Each block finds
// the minimum of its input with a shared-memory reduction and records the
// SM clock when it starts and ends; the host averages the clock ticks per
// block.
#include <vector>

#include "conformance.h"

constexpr int kBlocks = 64;
constexpr int kThreads = 256;

__global__ void timed_reduction(const float* input, float* output, long long* timer) {
  extern __shared__ float shared[];
  const int tid = threadIdx.x, bid = blockIdx.x;
  if (tid == 0) timer[bid] = clock64();
  shared[tid] = input[tid];
  shared[tid + blockDim.x] = input[tid + blockDim.x];
  for (int d = blockDim.x; d > 0; d /= 2) {
    __syncthreads();
    if (tid < d) {
      const float f0 = shared[tid], f1 = shared[tid + d];
      if (f1 < f0) shared[tid] = f1;
    }
  }
  if (tid == 0) output[bid] = shared[0];
  __syncthreads();
  if (tid == 0) timer[bid + gridDim.x] = clock64();
}

int main() {
  sample::name() = "clock_timing";
  std::printf("[clock_timing] %d blocks of %d threads\n", kBlocks, kThreads);
  std::vector<float> input(2 * kThreads), output(kBlocks);
  std::vector<long long> timer(2 * kBlocks);
  for (int i = 0; i < 2 * kThreads; ++i) input[i] = static_cast<float>(i);

  float *d_input, *d_output;
  long long* d_timer;
  checkCudaErrors(cudaMalloc(&d_input, input.size() * sizeof(float)));
  checkCudaErrors(cudaMalloc(&d_output, output.size() * sizeof(float)));
  checkCudaErrors(cudaMalloc(&d_timer, timer.size() * sizeof(long long)));
  checkCudaErrors(cudaMemset(d_timer, 0, timer.size() * sizeof(long long)));
  checkCudaErrors(cudaMemcpy(d_input, input.data(), input.size() * sizeof(float), cudaMemcpyHostToDevice));

  timed_reduction<<<kBlocks, kThreads, sizeof(float) * 2 * kThreads>>>(d_input, d_output, d_timer);
  getLastCudaError("timed_reduction");
  checkCudaErrors(cudaMemcpy(timer.data(), d_timer, timer.size() * sizeof(long long), cudaMemcpyDeviceToHost));
  checkCudaErrors(cudaMemcpy(output.data(), d_output, output.size() * sizeof(float), cudaMemcpyDeviceToHost));

  long double ticks = 0;
  for (int b = 0; b < kBlocks; ++b) ticks += timer[b + kBlocks] - timer[b];
  std::printf("Average time per block: %.2Lf clocks\n", ticks / kBlocks);

  bool ok = true;
  if (conformance::kernel_results_checkable()) {
    for (int b = 0; b < kBlocks && ok; ++b)
      if (output[b] != 0.0f || timer[b + kBlocks] < timer[b]) {
        std::fprintf(stderr, "clock_timing: block %d: minimum %f, clock %lld..%lld\n", b, output[b], timer[b],
                     timer[b + kBlocks]);
        ok = false;
      }
  } else {
    // The memset's zeros came back: the clocks travelled through the device.
    for (long long t : timer) ok = ok && t == 0;
  }
  checkCudaErrors(cudaFree(d_input));
  checkCudaErrors(cudaFree(d_output));
  checkCudaErrors(cudaFree(d_timer));
  return conformance::finish(ok);
}
