// service_loop: a long-running service stand-in for `gpuscope attach`
// (tests/e2e/test_attach.cpp). For --seconds S it serves "requests": copy
// the input to the device, run a few kernels, copy the result back,
// synchronize, rest a millisecond. The checksum it prints depends on the
// data only, never on how many requests fit in the time, so a traced and an
// untraced run print the same line.
#include <unistd.h>

#include <chrono>
#include <vector>

#include "common.hpp"

namespace {

constexpr int kBlocks = 16, kThreads = 256, kElems = kBlocks * kThreads, kKernels = 3;

__global__ void scale(float* data, float factor) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < kElems) data[i] *= factor;
}

}  // namespace

int main(int argc, char** argv) {
  sample::name() = "service_loop";
  const sample::Flags flags(argc, argv, {"seconds="}, "[--seconds S]");
  const auto seconds = std::chrono::seconds(flags.get("seconds", 3));
  std::vector<float> host(kElems), back(kElems);
  for (int i = 0; i < kElems; ++i) host[i] = static_cast<float>(i % 97);
  float* device = nullptr;
  CHECK(cudaMalloc(&device, kElems * sizeof(float)));
  const auto end = std::chrono::steady_clock::now() + seconds;
  double checksum = 0;
  while (std::chrono::steady_clock::now() < end) {
    CHECK(cudaMemcpy(device, host.data(), kElems * sizeof(float), cudaMemcpyHostToDevice));
    for (int k = 0; k < kKernels; ++k) {
      scale<<<kBlocks, kThreads>>>(device, 1.0f);
      CHECK_LAUNCH(scale);
    }
    CHECK(cudaMemcpy(back.data(), device, kElems * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK(cudaDeviceSynchronize());
    checksum = 0;
    for (float v : back) checksum += v;
    usleep(1000);
  }
  CHECK(cudaFree(device));
  std::printf("service_loop: checksum %.0f\n", checksum);
  return 0;
}
