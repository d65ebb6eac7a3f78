// cpu_fallback: a scoring service that probes for a GPU at startup and, when
// none is usable -- no driver, no device, devices hidden by
// CUDA_VISIBLE_DEVICES, an allocation that fails -- quietly scores on the CPU
// instead and says nothing about it.  The process list shows the service,
// nvidia-smi shows nothing for it, and the CPUs are saturated.
//
// --fixed: refuse to fall back.  When the GPU is not usable, report the CUDA
// error and exit with status 3, so the deployment fails where it broke.
#include <cmath>
#include <cstdint>
#include <vector>

#include "common.hpp"

namespace {

constexpr int kThreads = 256;
constexpr int kTaps = 64;  // multiply-adds per item and round

__host__ __device__ inline float weight(int k) { return 1.0f / static_cast<float>(k + 1); }

__host__ __device__ inline float input(unsigned round, unsigned i) {
  return static_cast<float>(sample::mix(round * 0x9e3779b9u ^ i) & 0xffff) / 65536.0f;
}

// Each item's score: a short filter over its neighbours.
__host__ __device__ inline float score_at(const float* x, size_t n, size_t i) {
  float acc = 0.0f;
  for (int k = 0; k < kTaps; ++k) acc += weight(k) * x[(i + k) % n];
  return acc;
}

__global__ void score_items(const float* x, float* y, size_t n) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = score_at(x, n, i);
}

// Usable means: a device is visible and memory can be allocated on it.  Any
// error here is swallowed (the unfixed service's mistake) or reported.
bool gpu_usable(bool report) {
  int count = 0;
  void* probe = nullptr;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e == cudaSuccess && count == 0) e = cudaErrorNoDevice;
  if (e == cudaSuccess) e = cudaMalloc(&probe, 1 << 20);
  if (e == cudaSuccess) e = cudaFree(probe);
  if (e != cudaSuccess && report)
    std::fprintf(stderr, "%s: no usable GPU: %s (%s); refusing to run on the CPU\n", sample::name(), cudaGetErrorName(e),
                 cudaGetErrorString(e));
  cudaGetLastError();  // leave no sticky error behind
  return e == cudaSuccess;
}

double checksum(const std::vector<float>& y) {
  double sum = 0;
  for (size_t i = 0; i < y.size(); i += 61) sum += y[i];
  return sum;
}

double run_cpu(size_t n, int rounds) {
  std::vector<float> x(n), y(n);
  double sum = 0;
  for (int r = 0; r < rounds; ++r) {
    for (size_t i = 0; i < n; ++i) x[i] = input(r, static_cast<unsigned>(i));
    for (size_t i = 0; i < n; ++i) y[i] = score_at(x.data(), n, i);
    sum += checksum(y);
  }
  return sum;
}

double run_gpu(size_t n, int rounds) {
  std::vector<float> x(n), y(n);
  float *d_x = nullptr, *d_y = nullptr;
  CHECK(cudaMalloc(&d_x, n * sizeof(float)));
  CHECK(cudaMalloc(&d_y, n * sizeof(float)));
  double sum = 0;
  for (int r = 0; r < rounds; ++r) {
    for (size_t i = 0; i < n; ++i) x[i] = input(r, static_cast<unsigned>(i));
    CHECK(cudaMemcpy(d_x, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    score_items<<<static_cast<unsigned>((n + kThreads - 1) / kThreads), kThreads>>>(d_x, d_y, n);
    CHECK_LAUNCH(score_items);
    CHECK(cudaMemcpy(y.data(), d_y, n * sizeof(float), cudaMemcpyDeviceToHost));
    sum += checksum(y);
  }
  // The last round's input reached the device intact; where kernels ran,
  // the scores match the CPU's.
  std::vector<float> back(n);
  CHECK(cudaMemcpy(back.data(), d_x, n * sizeof(float), cudaMemcpyDeviceToHost));
  sample::expect(back == x, "input round trip");
  if (sample::kernels_compute())
    for (size_t i = 0; i < n; i += 4099) sample::expect(std::fabs(y[i] - score_at(x.data(), n, i)) <= 1e-4f, "item score");
  CHECK(cudaFree(d_x));
  CHECK(cudaFree(d_y));
  return sum;
}

}  // namespace

int main(int argc, char** argv) {
  sample::name() = "cpu_fallback";
  const sample::Flags flags(argc, argv, {"items=", "rounds=", "fixed"}, "[--items N] [--rounds R] [--fixed]");
  const size_t n = static_cast<size_t>(flags.get("items", 1 << 20));
  const int rounds = static_cast<int>(flags.get("rounds", 10));
  const bool fixed = flags.has("fixed");
  const bool gpu = gpu_usable(fixed);
  if (!gpu && fixed) return 3;
  const sample::Stopwatch watch;
  const double sum = gpu ? run_gpu(n, rounds) : run_cpu(n, rounds);
  // Deliberately the same line either way: nothing says where it ran.
  sample::report("scored %zu items x %d rounds in %.3f s (checksum %.3f)", n, rounds, watch.seconds(), sum);
  return 0;
}
