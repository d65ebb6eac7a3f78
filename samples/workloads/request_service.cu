// request_service: a request loop wrapped in NVTX, for tail latency per
// request (gpuscope analyze --requests request; tests/verdicts/
// test_tail_latency.cpp). Each of --requests N requests is one NVTX range
// "request": a small input copied up from pinned memory, four kernels, the
// small result copied back, a synchronization on the request's stream.
// Every --large-every K-th request (none with --healthy) also
// brings a large input (--large-mib M) that it copies from pageable memory,
// as a service does with the occasional big upload it did not stage: those
// requests are the tail, slow from pageable copies where the median waits
// for its kernel. The output depends on the data only.
#include <nvtx3/nvToolsExt.h>

#include <vector>

#include "common.hpp"

namespace {

constexpr int kThreads = 256, kSmallElems = 16 * 1024;  // 64 KiB of floats
// A grid large enough that each kernel takes about a millisecond on an
// H200-class GPU (and on simgpu's model of one): requests of a few
// milliseconds, long next to a loaded host's scheduling delays.
constexpr int kBlocks = 1 << 21, kKernelsPerRequest = 4;

__global__ void score(float* data, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = data[i] * 0.5f + 1.0f;
}

struct Buffers {
  float *host_in = nullptr, *host_out = nullptr, *device = nullptr;
  char* device_large = nullptr;
  std::vector<char> large_input;  // pageable, like a request body the service just parsed
};

// One request; the large input's copy is the call site the tail comes from.
void serve(Buffers& b, cudaStream_t stream, bool large) {
  nvtxRangePushA("request");
  CHECK(cudaMemcpyAsync(b.device, b.host_in, kSmallElems * sizeof(float), cudaMemcpyHostToDevice, stream));
  if (large) CHECK(cudaMemcpy(b.device_large, b.large_input.data(), b.large_input.size(), cudaMemcpyHostToDevice));
  for (int k = 0; k < kKernelsPerRequest; ++k) {
    score<<<kBlocks, kThreads, 0, stream>>>(b.device, kSmallElems);
    CHECK_LAUNCH(score);
  }
  CHECK(cudaMemcpyAsync(b.host_out, b.device, kSmallElems * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CHECK(cudaStreamSynchronize(stream));
  nvtxRangePop();
}

}  // namespace

int main(int argc, char** argv) {
  sample::name() = "request_service";
  const sample::Flags flags(argc, argv, {"requests=", "large-every=", "large-mib=", "healthy"},
                            "[--requests N] [--large-every K | --healthy] [--large-mib M]");
  const long requests = flags.get("requests", 120);
  const long large_every = flags.has("healthy") ? 0 : flags.get("large-every", 10);
  Buffers b;
  b.large_input.assign(static_cast<size_t>(flags.get("large-mib", 64)) << 20, 1);
  CHECK(cudaMallocHost(&b.host_in, kSmallElems * sizeof(float)));
  CHECK(cudaMallocHost(&b.host_out, kSmallElems * sizeof(float)));
  CHECK(cudaMalloc(&b.device, kSmallElems * sizeof(float)));
  CHECK(cudaMalloc(&b.device_large, b.large_input.size()));
  for (int i = 0; i < kSmallElems; ++i) b.host_in[i] = static_cast<float>(i % 13);
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  double checksum = 0;
  for (long r = 0; r < requests; ++r) {
    serve(b, stream, large_every > 0 && r % large_every == large_every - 1);
    checksum += b.host_out[r % kSmallElems];
  }
  CHECK(cudaStreamDestroy(stream));
  CHECK(cudaFree(b.device_large));
  CHECK(cudaFree(b.device));
  CHECK(cudaFreeHost(b.host_out));
  CHECK(cudaFreeHost(b.host_in));
  std::printf("request_service: %ld requests, checksum %.1f\n", requests, checksum);
  return 0;
}
