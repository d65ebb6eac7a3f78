// compute_bound: large arithmetic-heavy kernels launched back to back on a
// full grid -- the healthy case.  The GPU is busy and the busy time is
// arithmetic: there is no copy, synchronization or host stall to remove, and
// gpuscope should say so.
//
// --fixed: the remaining lever for a compute-bound kernel -- cheaper math.
// The same chain of fused multiply-adds in packed half precision (two lanes
// per instruction), where the precision is acceptable.
#include <cuda_fp16.h>

#include <cmath>
#include <vector>

#include "common.hpp"

namespace {

constexpr int kThreads = 256;
constexpr int kChain = 4096;  // FMAs per thread and launch (the node file models 2 flops each)

__global__ void fma_chain(float* out, int launch) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  float x = out[i], y = 1.0f + 1e-4f * static_cast<float>(launch & 15);
  for (int k = 0; k < kChain; ++k) x = fmaf(x, 0.99993f, y * 1e-4f);
  out[i] = x;
}

// Two lanes per instruction: half the instructions for the same element work.
__global__ void fma_chain_half2(float* out, int launch) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  __half2 x = __floats2half2_rn(out[i], out[i]);
  const __half2 a = __float2half2_rn(0.99993f);
  const __half2 y = __float2half2_rn((1.0f + 1e-4f * static_cast<float>(launch & 15)) * 1e-4f);
  for (int k = 0; k < kChain / 2; ++k) x = __hfma2(x, a, y);
  out[i] = __low2float(x);
}

float reference(float x, int launches) {
  for (int l = 0; l < launches; ++l) {
    const float y = 1.0f + 1e-4f * static_cast<float>(l & 15);
    for (int k = 0; k < kChain; ++k) x = std::fma(x, 0.99993f, y * 1e-4f);
  }
  return x;
}

}  // namespace

int main(int argc, char** argv) {
  sample::name() = "compute_bound";
  const sample::Flags flags(argc, argv, {"blocks=", "iters=", "fixed"}, "[--blocks B] [--iters N] [--fixed]");
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int blocks = static_cast<int>(flags.get("blocks", 16L * sms));  // a full machine, several waves
  const int iters = static_cast<int>(flags.get("iters", 15000));
  const bool fixed = flags.has("fixed");
  const size_t n = size_t(blocks) * kThreads;
  std::vector<float> init(n);
  for (size_t i = 0; i < n; ++i) init[i] = static_cast<float>(sample::mix(static_cast<unsigned>(i)) & 0xff) / 256.0f;
  float* d_out = nullptr;
  CHECK(cudaMalloc(&d_out, n * sizeof(float)));
  CHECK(cudaMemcpy(d_out, init.data(), n * sizeof(float), cudaMemcpyHostToDevice));

  const sample::Stopwatch watch;
  for (int l = 0; l < iters; ++l) {
    if (fixed) {
      fma_chain_half2<<<blocks, kThreads>>>(d_out, l);
      CHECK_LAUNCH(fma_chain_half2);
    } else {
      fma_chain<<<blocks, kThreads>>>(d_out, l);
      CHECK_LAUNCH(fma_chain);
    }
  }
  CHECK(cudaDeviceSynchronize());
  const double seconds = watch.seconds();

  std::vector<float> out(n);
  CHECK(cudaMemcpy(out.data(), d_out, n * sizeof(float), cudaMemcpyDeviceToHost));
  if (!sample::kernels_compute()) {
    sample::expect(out == init, "buffer round trip");
  } else if (!fixed) {
    // A short run is replayed on the CPU; a long one has converged to the
    // chain's fixed point y * 1e-4 / (1 - 0.99993) ~= 1.43.
    for (size_t i = 0; i < n && (iters <= 4 || iters >= 100); i += 1009) {
      const float want = iters <= 4 ? reference(init[i], iters) : 1.43f;
      sample::expect(std::fabs(out[i] - want) <= (iters <= 4 ? 1e-3f : 0.02f), "fma chain result");
    }
  } else {
    for (size_t i = 0; i < n; i += 1009) sample::expect(std::isfinite(out[i]), "half2 result is finite");
  }
  CHECK(cudaFree(d_out));
  const double flops = 2.0 * kChain * double(n) * iters;
  sample::report("%d launches of %d x %d threads (%s) in %.3f s, %.1f TFLOP/s", iters, blocks, kThreads,
                 fixed ? "packed fp16" : "fp32", seconds, flops / seconds / 1e12);
  return 0;
}
