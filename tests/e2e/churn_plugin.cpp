// A plugin that links the CUDA runtime (churn_host.cpp loads and unloads it).
#include <cuda_runtime_api.h>

extern "C" __attribute__((visibility("default"))) int plugin_work() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess) return -1;
  void* p = nullptr;
  if (cudaMalloc(&p, 1 << 20) != cudaSuccess) return -2;
  return cudaFree(p) == cudaSuccess ? devices : -3;
}
