// constant_filter: a 1D convolution whose taps live in __constant__ memory,
// as filter and convolution samples keep them.  The taps go up with
// cudaMemcpyToSymbol and come back with cudaMemcpyFromSymbol (checked on any
// device); the signal goes up with cudaMemcpy, one kernel filters it, and
// the result comes back and is checked against the host's filter where
// kernels run.
#include <cmath>
#include <vector>

#include "conformance.h"

constexpr int kMaxRadius = 16;
__constant__ float c_taps[2 * kMaxRadius + 1];

__global__ void convolve(float* out, const float* in, int n, int radius) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float sum = 0.0f;
  for (int k = -radius; k <= radius; ++k) {
    const int j = min(max(i + k, 0), n - 1);
    sum += c_taps[radius + k] * in[j];
  }
  out[i] = sum;
}

int main(int argc, char** argv) {
  sample::name() = "constant_filter";
  const sample::Flags flags(argc, argv, {"n=", "radius="}, "[--n=ELEMENTS] [--radius=TAPS_EACH_SIDE]");
  const int n = static_cast<int>(flags.get("n", 1 << 20));
  const int radius = static_cast<int>(flags.get("radius", 8));
  if (radius < 0 || radius > kMaxRadius) {
    std::fprintf(stderr, "constant_filter: --radius must be 0..%d\n", kMaxRadius);
    return EXIT_FAILURE;
  }
  const int taps = 2 * radius + 1;
  std::printf("[constant_filter] %d elements, %d taps\n", n, taps);
  std::vector<float> h_taps(taps), taps_back(taps), in(n), out(n);
  for (int k = 0; k < taps; ++k) h_taps[k] = 1.0f / static_cast<float>(1 + std::abs(k - radius));
  conformance::fill(in.data(), in.size(), 5);

  checkCudaErrors(cudaMemcpyToSymbol(c_taps, h_taps.data(), taps * sizeof(float)));
  checkCudaErrors(cudaMemcpyFromSymbol(taps_back.data(), c_taps, taps * sizeof(float)));
  float *d_in = nullptr, *d_out = nullptr;
  checkCudaErrors(cudaMalloc(&d_in, n * sizeof(float)));
  checkCudaErrors(cudaMalloc(&d_out, n * sizeof(float)));
  checkCudaErrors(cudaMemcpy(d_in, in.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  convolve<<<(n + 255) / 256, 256>>>(d_out, d_in, n, radius);
  getLastCudaError("convolve");
  checkCudaErrors(cudaDeviceSynchronize());
  checkCudaErrors(cudaMemcpy(out.data(), d_out, n * sizeof(float), cudaMemcpyDeviceToHost));

  bool ok = taps_back == h_taps;
  if (!ok) std::fprintf(stderr, "constant_filter: the taps read back differ\n");
  if (conformance::kernel_results_checkable())
    for (int i = 0; i < n && ok; ++i) {
      float want = 0.0f;
      for (int k = -radius; k <= radius; ++k) want += h_taps[radius + k] * in[std::min(std::max(i + k, 0), n - 1)];
      if (std::fabs(out[i] - want) > 1e-3f * (1.0f + std::fabs(want))) {
        std::fprintf(stderr, "constant_filter: element %d is %f, not %f\n", i, out[i], want);
        ok = false;
      }
    }
  checkCudaErrors(cudaFree(d_in));
  checkCudaErrors(cudaFree(d_out));
  return conformance::finish(ok);
}
