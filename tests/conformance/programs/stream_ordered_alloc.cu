// stream_ordered_alloc: allocation in stream order, from the device's
// default memory pool (kept warm with a release threshold) and from a pool
// the program creates: --iters rounds of cudaMallocAsync, vector add and
// cudaFreeAsync on one stream, then one cleared buffer from the own pool.
#include <cstdint>
#include <vector>

#include "conformance.h"

__global__ void vector_add(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

int main(int argc, char** argv) {
  sample::name() = "stream_ordered_alloc";
  const sample::Flags flags(argc, argv, {"n=", "iters="}, "[--n=FLOATS] [--iters=K]");
  const int n = static_cast<int>(flags.get("n", 1 << 18));
  const int iters = static_cast<int>(flags.get("iters", 20));
  const size_t bytes = n * sizeof(float);
  std::printf("[stream_ordered_alloc] %d rounds of %d floats\n", iters, n);

  int device = 0;
  checkCudaErrors(cudaGetDevice(&device));
  int supported = 0;
  checkCudaErrors(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, device));
  if (!supported) {
    std::printf("device %d does not support memory pools: waiving\n", device);
    return EXIT_WAIVED;
  }
  cudaMemPool_t pool;
  checkCudaErrors(cudaDeviceGetDefaultMemPool(&pool, device));
  uint64_t threshold = UINT64_MAX;
  checkCudaErrors(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));

  float *a, *b, *c;
  checkCudaErrors(cudaMallocHost(&a, bytes));
  checkCudaErrors(cudaMallocHost(&b, bytes));
  checkCudaErrors(cudaMallocHost(&c, bytes));
  conformance::fill(a, n, 13);
  conformance::fill(b, n, 14);
  cudaStream_t s;
  checkCudaErrors(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  for (int k = 0; k < iters; ++k) {
    float *d_a, *d_b, *d_c;
    checkCudaErrors(cudaMallocAsync(&d_a, bytes, s));
    checkCudaErrors(cudaMallocAsync(&d_b, bytes, s));
    checkCudaErrors(cudaMallocAsync(&d_c, bytes, s));
    checkCudaErrors(cudaMemcpyAsync(d_a, a, bytes, cudaMemcpyHostToDevice, s));
    checkCudaErrors(cudaMemcpyAsync(d_b, b, bytes, cudaMemcpyHostToDevice, s));
    vector_add<<<(n + 255) / 256, 256, 0, s>>>(d_a, d_b, d_c, n);
    checkCudaErrors(cudaMemcpyAsync(c, d_c, bytes, cudaMemcpyDeviceToHost, s));
    checkCudaErrors(cudaFreeAsync(d_a, s));
    checkCudaErrors(cudaFreeAsync(d_b, s));
    checkCudaErrors(cudaFreeAsync(d_c, s));
  }
  checkCudaErrors(cudaStreamSynchronize(s));
  bool ok = true;
  if (conformance::kernel_results_checkable())
    for (int i = 0; i < n && ok; ++i) ok = c[i] == a[i] + b[i];
  if (!ok) std::fprintf(stderr, "stream_ordered_alloc: the sums are wrong\n");

  cudaMemPoolProps props = {};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  cudaMemPool_t own;
  checkCudaErrors(cudaMemPoolCreate(&own, &props));
  float* d = nullptr;
  checkCudaErrors(cudaMallocFromPoolAsync(reinterpret_cast<void**>(&d), bytes, own, s));
  checkCudaErrors(cudaMemsetAsync(d, 0, bytes, s));
  checkCudaErrors(cudaMemcpyAsync(c, d, bytes, cudaMemcpyDeviceToHost, s));
  checkCudaErrors(cudaFreeAsync(d, s));
  checkCudaErrors(cudaStreamSynchronize(s));
  for (int i = 0; i < n; ++i)
    if (c[i] != 0.0f) {
      std::fprintf(stderr, "stream_ordered_alloc: the cleared pool buffer came back with %f at %d\n", c[i], i);
      ok = false;
      break;
    }
  checkCudaErrors(cudaMemPoolDestroy(own));

  checkCudaErrors(cudaStreamDestroy(s));
  checkCudaErrors(cudaFreeHost(a));
  checkCudaErrors(cudaFreeHost(b));
  checkCudaErrors(cudaFreeHost(c));
  return conformance::finish(ok);
}
