// gpu_probe: is a GPU usable through the CUDA runtime this process loads?
// Prints the first device's name and exits 0, or prints the CUDA error and
// exits 1.  samples/simgpu/gpu-or-simgpu uses it to choose between the real
// GPU and simgpu.
#include <cuda_runtime.h>

#include <cstdio>

int main() {
  int count = 0;
  void* p = nullptr;
  cudaDeviceProp prop;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e == cudaSuccess && count == 0) e = cudaErrorNoDevice;
  if (e == cudaSuccess) e = cudaGetDeviceProperties(&prop, 0);
  if (e == cudaSuccess) e = cudaMalloc(&p, 1 << 20);
  if (e == cudaSuccess) e = cudaFree(p);
  if (e != cudaSuccess) {
    std::printf("gpu_probe: no usable GPU: %s (%s)\n", cudaGetErrorName(e), cudaGetErrorString(e));
    return 1;
  }
  std::printf("gpu_probe: %d device(s), device 0: %s\n", count, prop.name);
  return 0;
}
