// memory_bound: three streaming kernels per step (scale, add, triad) that do
// one or two flops per element and move 8-12 bytes for each: DRAM bandwidth,
// not arithmetic, sets their speed, and the GPU looks 100% busy throughout.
//
// --fixed: one fused kernel computes the same result reading b once and
// writing d once -- a quarter of the bytes, so a quarter of the time.
#include <cmath>
#include <vector>

#include "common.hpp"

namespace {

constexpr int kThreads = 256;
constexpr float kScale = 0.75f;

__global__ void stream_scale(float* a, const float* b, float s, size_t n) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) a[i] = s * b[i];
}

__global__ void stream_add(float* c, const float* a, const float* b, size_t n) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

__global__ void stream_triad(float* d, const float* c, const float* a, float s, size_t n) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) d[i] = c[i] + s * a[i];
}

// d = (s*b + b) + s*(s*b), with a and c kept in registers.
__global__ void fused_scale_add_triad(float* d, const float* b, float s, size_t n) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float a = s * b[i];
  const float c = a + b[i];
  d[i] = c + s * a;
}

float expected(float b) {
  const float a = kScale * b;
  return (a + b) + kScale * a;
}

struct Arrays {
  float *a, *b, *c, *d;
};

void run(const Arrays& x, size_t n, int iters, bool fixed) {
  const unsigned grid = static_cast<unsigned>((n + kThreads - 1) / kThreads);
  for (int i = 0; i < iters; ++i) {
    if (fixed) {
      fused_scale_add_triad<<<grid, kThreads>>>(x.d, x.b, kScale, n);
      CHECK_LAUNCH(fused_scale_add_triad);
      continue;
    }
    stream_scale<<<grid, kThreads>>>(x.a, x.b, kScale, n);
    CHECK_LAUNCH(stream_scale);
    stream_add<<<grid, kThreads>>>(x.c, x.a, x.b, n);
    CHECK_LAUNCH(stream_add);
    stream_triad<<<grid, kThreads>>>(x.d, x.c, x.a, kScale, n);
    CHECK_LAUNCH(stream_triad);
  }
  CHECK(cudaDeviceSynchronize());
}

}  // namespace

int main(int argc, char** argv) {
  sample::name() = "memory_bound";
  const sample::Flags flags(argc, argv, {"n=", "iters=", "fixed"}, "[--n ELEMENTS] [--iters N] [--fixed]");
  const size_t n = static_cast<size_t>(flags.get("n", 1 << 24));
  const int iters = static_cast<int>(flags.get("iters", 10000));
  const bool fixed = flags.has("fixed");
  std::vector<float> b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<float>(sample::mix(static_cast<unsigned>(i)) & 0xffff) / 65536.0f;
  Arrays x{};
  for (float** p : {&x.a, &x.b, &x.c, &x.d}) CHECK(cudaMalloc(p, n * sizeof(float)));
  CHECK(cudaMemcpy(x.b, b.data(), n * sizeof(float), cudaMemcpyHostToDevice));

  const sample::Stopwatch watch;
  run(x, n, iters, fixed);
  const double seconds = watch.seconds();

  std::vector<float> back(n);
  CHECK(cudaMemcpy(back.data(), x.b, n * sizeof(float), cudaMemcpyDeviceToHost));
  sample::expect(back == b, "input round trip");  // b is only ever read
  if (sample::kernels_compute()) {
    CHECK(cudaMemcpy(back.data(), x.d, n * sizeof(float), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; i += 4099)
      sample::expect(std::fabs(back[i] - expected(b[i])) <= 1e-5f * (1.0f + std::fabs(back[i])), "triad result");
  }
  for (float* p : {x.a, x.b, x.c, x.d}) CHECK(cudaFree(p));
  const double bytes = double(iters) * n * (fixed ? 8.0 : 32.0);
  sample::report("%d steps over %zu floats (%s) in %.3f s, %.0f GB/s of kernel traffic", iters, n,
                 fixed ? "fused: 8 bytes/element" : "scale+add+triad: 32 bytes/element", seconds, bytes / seconds / 1e9);
  return 0;
}
