// A plugin that links the CUDA runtime (churn_host.cpp loads and unloads
// it): the runtime is a dependency the loader maps for the plugin, never
// dlopen'ed itself. Allocates, copies in a batch and frees.
#include <cuda_runtime_api.h>

#include <vector>

extern "C" __attribute__((visibility("default"))) int plugin_work() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess) return -1;
  constexpr size_t kBytes = 1 << 20;
  void* p = nullptr;
  cudaStream_t s = nullptr;
  if (cudaMalloc(&p, kBytes) != cudaSuccess || cudaStreamCreate(&s) != cudaSuccess) return -2;
  std::vector<char> host(kBytes, 1);
  void* dsts[] = {p};
  const void* srcs[] = {host.data()};
  size_t sizes[] = {kBytes}, first = 0;
  cudaMemcpyAttributes in_order{};
  in_order.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  if (cudaMemcpyBatchAsync(dsts, srcs, sizes, 1, &in_order, &first, 1, s) != cudaSuccess) return -3;
  if (cudaStreamSynchronize(s) != cudaSuccess || cudaStreamDestroy(s) != cudaSuccess) return -4;
  return cudaFree(p) == cudaSuccess ? devices : -5;
}
