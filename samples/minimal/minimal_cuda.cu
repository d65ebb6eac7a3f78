// The smallest real CUDA program: allocate, copy in, launch, copy out, check.
// It reports a CUDA error and exits 1 when no GPU is usable, which is itself
// something gpuscope must capture.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

__global__ void add_one(float* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += 1.0f;
}

static bool check(cudaError_t rc, const char* what) {
  if (rc == cudaSuccess) return true;
  std::fprintf(stderr, "minimal_cuda: %s failed: %s (%d)\n", what, cudaGetErrorString(rc),
               static_cast<int>(rc));
  return false;
}

int main() {
  constexpr int n = 1 << 20;
  int devices = 0;
  if (!check(cudaGetDeviceCount(&devices), "cudaGetDeviceCount")) return 1;
  std::vector<float> host(n, 1.0f);
  float* dev = nullptr;
  if (!check(cudaMalloc(&dev, n * sizeof(float)), "cudaMalloc")) return 1;
  if (!check(cudaMemcpy(dev, host.data(), n * sizeof(float), cudaMemcpyHostToDevice), "copy in"))
    return 1;
  add_one<<<(n + 255) / 256, 256>>>(dev, n);
  if (!check(cudaGetLastError(), "launch")) return 1;
  if (!check(cudaMemcpy(host.data(), dev, n * sizeof(float), cudaMemcpyDeviceToHost), "copy out"))
    return 1;
  if (!check(cudaFree(dev), "cudaFree")) return 1;
  std::printf("minimal_cuda: %d device(s), copied %zu bytes each way\n", devices,
              n * sizeof(float));
  return 0;
}
