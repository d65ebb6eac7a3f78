// cuda_errors: a program whose first GPU work fails on a GPU that works --
// the shape of a model too large for its GPU, or a kernel launched with more
// threads per block than any GPU allows. CUDA is available; the program's
// request is what fails, so "CUDA unavailable" would send its user to fix a
// driver that is fine (docs/rules.md, "What a CUDA error says").
//   --oversized           one cudaMalloc of twice the device's memory
//   --too-many-threads    a launch of 2048 threads per block
//   --cpu-fallback        on the error, compute on the CPU and exit 0
//                         (a service that carries on without its GPU)
//   --after-work          first a round of real work (upload, 10 launches,
//                         download), then the failing request: a run that
//                         worked until its input outgrew the GPU
#include <vector>

#include "common.hpp"

__global__ void scale(float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 2.0f;
}

cudaError_t oversized_allocation() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  float* x = nullptr;
  const cudaError_t e = cudaMalloc(&x, 2 * prop.totalGlobalMem);
  if (e == cudaSuccess) cudaFree(x);
  return e;
}

void some_work() {
  const int n = 1 << 16;
  std::vector<float> host(n, 1.0f);
  float* x = nullptr;
  CHECK(cudaMalloc(&x, n * sizeof(float)));
  CHECK(cudaMemcpy(x, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  for (int i = 0; i < 10; ++i) {
    scale<<<(n + 255) / 256, 256>>>(x, n);
    CHECK_LAUNCH(scale);
  }
  CHECK(cudaMemcpy(host.data(), x, n * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(x));
}

cudaError_t launch_over_the_limit() {
  scale<<<1, 2048>>>(nullptr, 0);
  return cudaGetLastError();
}

int main(int argc, char** argv) {
  sample::name() = "cuda_errors";
  const sample::Flags flags(argc, argv, {"oversized", "too-many-threads", "cpu-fallback", "after-work"},
                            "--oversized | --too-many-threads [--cpu-fallback] [--after-work]");
  int devices = 0;
  CHECK(cudaGetDeviceCount(&devices));
  if (flags.has("after-work")) some_work();
  const cudaError_t e = flags.has("too-many-threads") ? launch_over_the_limit() : oversized_allocation();
  if (e == cudaSuccess) {
    std::printf("cuda_errors: the request succeeded; nothing to show\n");
    return 3;
  }
  std::fprintf(stderr, "cuda_errors: %s (%s)\n", cudaGetErrorName(e), cudaGetErrorString(e));
  if (!flags.has("cpu-fallback")) return 1;
  std::vector<float> x(1 << 16, 1.0f);
  for (float& v : x) v *= 2.0f;
  std::printf("cuda_errors: computed on the CPU instead (%g)\n", x[0]);
  return 0;
}
