// batch_embed: a batch job that shares its GPU with a service, the
// co-tenant of the tail-latency tests (tests/verdicts/test_tail_latency.cpp):
// --bursts times, every --period-ms, it queues --burst-kernels large kernels
// (about a millisecond each on an H200-class GPU and on simgpu's model of
// one) and waits for them with cudaDeviceSynchronize, as an embedding job
// does with each batch. Between bursts the GPU is the service's; during a
// burst a real GPU time-slices the two processes' work, and simgpu queues the
// service's kernels behind the batch's when both name the same
// SIMGPU_SHARED_ID. The output depends on the data only.
#include <chrono>
#include <thread>

#include "common.hpp"

namespace {

constexpr int kThreads = 256, kBlocks = 1 << 21;
constexpr int kElems = 1 << 20;

__global__ void embed(float* data, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = data[i] * 0.25f + 2.0f;
}

}  // namespace

int main(int argc, char** argv) {
  sample::name() = "batch_embed";
  const sample::Flags flags(argc, argv, {"bursts=", "period-ms=", "burst-kernels="},
                            "[--bursts N] [--period-ms P] [--burst-kernels K]");
  const long bursts = flags.get("bursts", 20), period_ms = flags.get("period-ms", 50);
  const long kernels = flags.get("burst-kernels", 12);
  float* device = nullptr;
  CHECK(cudaMalloc(&device, kElems * sizeof(float)));
  CHECK(cudaMemset(device, 0, kElems * sizeof(float)));
  auto next = std::chrono::steady_clock::now();
  for (long b = 0; b < bursts; ++b) {
    std::this_thread::sleep_until(next);
    next += std::chrono::milliseconds(period_ms);
    for (long k = 0; k < kernels; ++k) {
      embed<<<kBlocks, kThreads>>>(device, kElems);
      CHECK_LAUNCH(embed);
    }
    CHECK(cudaDeviceSynchronize());
  }
  float first = -1;
  CHECK(cudaMemcpy(&first, device, sizeof first, cudaMemcpyDeviceToHost));
  CHECK(cudaFree(device));
  std::printf("batch_embed: %ld bursts of %ld kernels\n", bursts, kernels);
  return 0;
}
