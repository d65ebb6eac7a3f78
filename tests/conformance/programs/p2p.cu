// p2p: two GPUs talking directly.  Needs two devices with peer access
// (EXIT_WAIVED otherwise): enables it both ways, times --reps copies
// between the GPUs through unified addressing, then has each GPU's kernel
// read the other's memory, and checks what comes back to the host.
#include <vector>

#include "conformance.h"

__global__ void double_from(const float* src, float* dst, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = src[i] * 2.0f;
}

int main(int argc, char** argv) {
  sample::name() = "p2p";
  const sample::Flags flags(argc, argv, {"n=", "reps="}, "[--n=FLOATS] [--reps=R]");
  const int n = static_cast<int>(flags.get("n", 1 << 22));
  const int reps = static_cast<int>(flags.get("reps", 20));
  const size_t bytes = n * sizeof(float);

  int count = 0;
  checkCudaErrors(cudaGetDeviceCount(&count));
  std::printf("[p2p] %d CUDA-capable device(s)\n", count);
  if (count < 2) {
    std::printf("two or more GPUs with peer access are required: waiving\n");
    return EXIT_WAIVED;
  }
  int access01 = 0, access10 = 0;
  checkCudaErrors(cudaDeviceCanAccessPeer(&access01, 0, 1));
  checkCudaErrors(cudaDeviceCanAccessPeer(&access10, 1, 0));
  std::printf("peer access GPU0 -> GPU1: %s, GPU1 -> GPU0: %s\n", access01 ? "yes" : "no", access10 ? "yes" : "no");
  if (!access01 || !access10) {
    std::printf("peer access is not available between GPU0 and GPU1: waiving\n");
    return EXIT_WAIVED;
  }
  checkCudaErrors(cudaSetDevice(0));
  checkCudaErrors(cudaDeviceEnablePeerAccess(1, 0));
  checkCudaErrors(cudaSetDevice(1));
  checkCudaErrors(cudaDeviceEnablePeerAccess(0, 0));

  float *g0, *g1, *h;
  checkCudaErrors(cudaSetDevice(0));
  checkCudaErrors(cudaMalloc(&g0, bytes));
  checkCudaErrors(cudaSetDevice(1));
  checkCudaErrors(cudaMalloc(&g1, bytes));
  checkCudaErrors(cudaMallocHost(&h, bytes));

  checkCudaErrors(cudaSetDevice(0));
  conformance::EventTimer timer;
  timer.start();
  for (int r = 0; r < reps; ++r) {
    if (r % 2 == 0)
      checkCudaErrors(cudaMemcpy(g1, g0, bytes, cudaMemcpyDefault));
    else
      checkCudaErrors(cudaMemcpy(g0, g1, bytes, cudaMemcpyDefault));
  }
  std::printf("cudaMemcpy between GPU0 and GPU1: %.2f GB/s\n", static_cast<double>(bytes) * reps / (timer.stop_ms() * 1e6));

  std::vector<float> original(n);
  conformance::fill(original.data(), n, 6);
  std::memcpy(h, original.data(), bytes);
  checkCudaErrors(cudaMemcpy(g0, h, bytes, cudaMemcpyDefault));
  checkCudaErrors(cudaMemcpyPeer(g1, 1, g0, 0, bytes));
  // GPU1 reads GPU0's memory, then GPU0 reads GPU1's.
  checkCudaErrors(cudaSetDevice(1));
  double_from<<<(n + 255) / 256, 256>>>(g0, g1, n);
  getLastCudaError("double_from on GPU1");
  checkCudaErrors(cudaDeviceSynchronize());
  checkCudaErrors(cudaSetDevice(0));
  double_from<<<(n + 255) / 256, 256>>>(g1, g0, n);
  getLastCudaError("double_from on GPU0");
  checkCudaErrors(cudaDeviceSynchronize());
  checkCudaErrors(cudaMemcpy(h, g0, bytes, cudaMemcpyDefault));

  const float factor = conformance::kernel_results_checkable() ? 4.0f : 1.0f;
  bool ok = true;
  for (int i = 0; i < n && ok; ++i)
    if (h[i] != original[i] * factor) {
      std::fprintf(stderr, "p2p: element %d is %f, expected %f\n", i, h[i], original[i] * factor);
      ok = false;
    }

  timer.release();
  checkCudaErrors(cudaDeviceDisablePeerAccess(1));
  checkCudaErrors(cudaSetDevice(1));
  checkCudaErrors(cudaDeviceDisablePeerAccess(0));
  checkCudaErrors(cudaFreeHost(h));
  checkCudaErrors(cudaFree(g1));
  checkCudaErrors(cudaSetDevice(0));
  checkCudaErrors(cudaFree(g0));
  return conformance::finish(ok);
}
