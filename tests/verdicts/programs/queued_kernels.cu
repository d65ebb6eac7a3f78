// queued_kernels: the shape of a batch job that queues all its work and
// waits once -- --kernels N launches of a long kernel on one stream, then a
// single cudaStreamSynchronize, then the result back. The host blocks in
// that one synchronization while the GPU works through the queue: a
// GPU-bound program, not a sync-bound one, even when no NVML sample says
// how busy the GPU was (docs/rules.md "GPU busy from the host").
#include <vector>

#include "common.hpp"

__global__ void smooth(float* x, int n, int rounds) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  for (int r = 0; r < rounds; ++r) v = 0.5f * v + 0.25f * __sinf(v + r);
  x[i] = v;
}

int main(int argc, char** argv) {
  sample::name() = "queued_kernels";
  const sample::Flags flags(argc, argv, {"kernels=", "rounds="}, "[--kernels N] [--rounds R]");
  const int kernels = static_cast<int>(flags.get("kernels", 200));
  const int rounds = static_cast<int>(flags.get("rounds", 4096));
  const int n = 1 << 22;
  std::vector<float> host(n, 1.0f);
  float* x = nullptr;
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));
  CHECK(cudaMalloc(&x, n * sizeof(float)));
  CHECK(cudaMemcpy(x, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  for (int k = 0; k < kernels; ++k) {
    smooth<<<(n + 255) / 256, 256, 0, stream>>>(x, n, rounds);
    CHECK_LAUNCH(smooth);
  }
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaMemcpy(host.data(), x, n * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(x));
  CHECK(cudaStreamDestroy(stream));
  sample::report("%d kernels queued, one synchronization", kernels);
  return 0;
}
