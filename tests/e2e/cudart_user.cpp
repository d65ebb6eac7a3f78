// A program linked with libcudart.so.13 (simgpu's at run time) making a few
// runtime calls through its PLT, so the preloaded hooks resolve the real
// functions as the next definitions in the global scope.
#include <cuda_runtime_api.h>

#include <cstdio>

int main() {
  int devices = -1;
  const cudaError_t count = cudaGetDeviceCount(&devices);
  void* p = nullptr;
  const cudaError_t alloc = cudaMalloc(&p, 1 << 20);
  const cudaError_t release = cudaFree(p);
  std::printf("cudaGetDeviceCount %d (%d devices), cudaMalloc %d, cudaFree %d\n", count, devices, alloc, release);
  return count == cudaSuccess && alloc == cudaSuccess && release == cudaSuccess ? 0 : 1;
}
