// bandwidth_test: host-to-device, device-to-host and device-to-device
// bandwidth for one transfer size, from pageable and from pinned host
// memory, each the average of --reps copies timed with events.  The bytes
// that went up come back down and are compared.
#include <vector>

#include "conformance.h"

namespace {

struct Buffers {
  unsigned char* host;
  unsigned char* host_back;
  unsigned char* device;
  unsigned char* device2;
};

conformance::EventTimer* timer;

// Times --reps copies; pinned memory goes through cudaMemcpyAsync, as
// bandwidth tools do, pageable memory through cudaMemcpy.
double gbps(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, int reps, bool async) {
  timer->start();
  for (int r = 0; r < reps; ++r) {
    if (async)
      checkCudaErrors(cudaMemcpyAsync(dst, src, bytes, kind, 0));
    else
      checkCudaErrors(cudaMemcpy(dst, src, bytes, kind));
  }
  return static_cast<double>(bytes) * reps / (timer->stop_ms() * 1e6);
}

bool measure(const char* mode, Buffers& b, size_t bytes, int reps, bool pinned) {
  for (size_t i = 0; i < bytes; ++i) b.host[i] = static_cast<unsigned char>(sample::mix(static_cast<unsigned>(i)));
  std::memset(b.host_back, 0, bytes);
  std::printf(" %s memory\n", mode);
  std::printf("   Host to Device Bandwidth: %.1f GB/s\n", gbps(b.device, b.host, bytes, cudaMemcpyHostToDevice, reps, pinned));
  std::printf("   Device to Host Bandwidth: %.1f GB/s\n", gbps(b.host_back, b.device, bytes, cudaMemcpyDeviceToHost, reps, pinned));
  const bool same = std::memcmp(b.host, b.host_back, bytes) == 0;
  if (!same) std::fprintf(stderr, "bandwidth_test: %s: the bytes copied back differ\n", mode);
  return same;
}

}  // namespace

int main(int argc, char** argv) {
  sample::name() = "bandwidth_test";
  const sample::Flags flags(argc, argv, {"bytes=", "reps="}, "[--bytes=N] [--reps=R]");
  const size_t bytes = static_cast<size_t>(flags.get("bytes", 32 << 20));
  const int reps = static_cast<int>(flags.get("reps", 10));
  std::printf("[bandwidth_test] transfer size %zu bytes, %d copies each\n", bytes, reps);

  Buffers pageable{}, pinned{};
  std::vector<unsigned char> host(bytes), host_back(bytes);
  pageable.host = host.data();
  pageable.host_back = host_back.data();
  checkCudaErrors(cudaMallocHost(&pinned.host, bytes));
  checkCudaErrors(cudaMallocHost(&pinned.host_back, bytes));
  checkCudaErrors(cudaMalloc(&pageable.device, bytes));
  checkCudaErrors(cudaMalloc(&pageable.device2, bytes));
  pinned.device = pageable.device;
  pinned.device2 = pageable.device2;
  conformance::EventTimer events;
  timer = &events;

  bool ok = measure("Pageable", pageable, bytes, reps, false);
  ok = measure("Pinned", pinned, bytes, reps, true) && ok;
  std::printf(" Device to Device Bandwidth: %.1f GB/s\n",
              2 * gbps(pinned.device2, pinned.device, bytes, cudaMemcpyDeviceToDevice, reps, false));
  checkCudaErrors(cudaMemcpy(pinned.host_back, pinned.device2, bytes, cudaMemcpyDeviceToHost));
  if (std::memcmp(pinned.host, pinned.host_back, bytes) != 0) {
    std::fprintf(stderr, "bandwidth_test: the device-to-device copy differs\n");
    ok = false;
  }

  events.release();
  checkCudaErrors(cudaFreeHost(pinned.host));
  checkCudaErrors(cudaFreeHost(pinned.host_back));
  checkCudaErrors(cudaFree(pageable.device));
  checkCudaErrors(cudaFree(pageable.device2));
  return conformance::finish(ok);
}
