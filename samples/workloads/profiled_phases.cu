// profiled_phases: a program that marks the part worth profiling with the
// CUDA profiler API, as benchmarks and replays do. Each round loads its
// input (host-to-device copies), then -- between cudaProfilerStart and
// cudaProfilerStop -- runs the measured step (kernels, one device-to-host
// copy, one synchronize), then clears its buffer (memsets). Under
// `gpuscope run --capture-range cudaProfilerApi` only the measured steps
// are recorded; tests/e2e/test_capture_windows.cpp checks exactly that.
#include <cuda_profiler_api.h>

#include <vector>

#include "common.hpp"

namespace {

constexpr int kBlocks = 32, kThreads = 256, kElems = kBlocks * kThreads;

__global__ void scale(float* data, float factor) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < kElems) data[i] *= factor;
}

}  // namespace

int main(int argc, char** argv) {
  sample::name() = "profiled_phases";
  const sample::Flags flags(argc, argv, {"rounds=", "loads=", "kernels=", "clears="},
                            "[--rounds R] [--loads L] [--kernels K] [--clears C]");
  const int rounds = static_cast<int>(flags.get("rounds", 2));
  const int loads = static_cast<int>(flags.get("loads", 3));
  const int kernels = static_cast<int>(flags.get("kernels", 5));
  const int clears = static_cast<int>(flags.get("clears", 4));
  std::vector<float> host(kElems, 1.0f), back(kElems);
  float* device = nullptr;
  CHECK(cudaMalloc(&device, kElems * sizeof(float)));
  for (int r = 0; r < rounds; ++r) {
    for (int i = 0; i < loads; ++i)  // setup: not profiled
      CHECK(cudaMemcpy(device, host.data(), kElems * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaProfilerStart());
    for (int i = 0; i < kernels; ++i) {
      scale<<<kBlocks, kThreads>>>(device, 1.0f);
      CHECK_LAUNCH(scale);
    }
    CHECK(cudaMemcpy(back.data(), device, kElems * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaProfilerStop());
    for (int i = 0; i < clears; ++i) CHECK(cudaMemset(device, 0, kElems * sizeof(float)));  // teardown
    sample::expect(back[0] == 1.0f, "the measured step left the data as loaded");
  }
  CHECK(cudaFree(device));
  std::printf("profiled_phases: %d rounds of %d loads, %d kernels (profiled), %d clears\n", rounds, loads, kernels,
              clears);
  return 0;
}
