// zero_copy: a kernel working directly on mapped host memory.  The inputs
// and the output are allocated with cudaHostAlloc(cudaHostAllocMapped); the
// kernel reads and writes them through the device pointers
// cudaHostGetDevicePointer returns, so nothing is copied at all.
#include "conformance.h"

__global__ void vector_add_mapped(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

int main(int argc, char** argv) {
  sample::name() = "zero_copy";
  const sample::Flags flags(argc, argv, {"n="}, "[--n=FLOATS]");
  const int n = static_cast<int>(flags.get("n", 1 << 20));
  const size_t bytes = n * sizeof(float);
  std::printf("[zero_copy] %d floats in mapped host memory\n", n);

  int device = 0;
  cudaDeviceProp prop;
  checkCudaErrors(cudaGetDevice(&device));
  checkCudaErrors(cudaGetDeviceProperties(&prop, device));
  if (!prop.canMapHostMemory) {
    std::printf("device %d cannot map host memory: waiving\n", device);
    return EXIT_WAIVED;
  }
  checkCudaErrors(cudaSetDeviceFlags(cudaDeviceMapHost));

  float *a, *b, *c, *d_a, *d_b, *d_c;
  checkCudaErrors(cudaHostAlloc(&a, bytes, cudaHostAllocMapped));
  checkCudaErrors(cudaHostAlloc(&b, bytes, cudaHostAllocMapped));
  checkCudaErrors(cudaHostAlloc(&c, bytes, cudaHostAllocMapped));
  conformance::fill(a, n, 4);
  conformance::fill(b, n, 5);
  std::memset(c, 0, bytes);
  checkCudaErrors(cudaHostGetDevicePointer(&d_a, a, 0));
  checkCudaErrors(cudaHostGetDevicePointer(&d_b, b, 0));
  checkCudaErrors(cudaHostGetDevicePointer(&d_c, c, 0));

  vector_add_mapped<<<(n + 255) / 256, 256>>>(d_a, d_b, d_c, n);
  getLastCudaError("vector_add_mapped");
  checkCudaErrors(cudaDeviceSynchronize());

  bool ok = true;
  if (conformance::kernel_results_checkable()) {
    for (int i = 0; i < n && ok; ++i)
      if (c[i] != a[i] + b[i]) {
        std::fprintf(stderr, "zero_copy: element %d is %f\n", i, c[i]);
        ok = false;
      }
  }
  checkCudaErrors(cudaFreeHost(a));
  checkCudaErrors(cudaFreeHost(b));
  checkCudaErrors(cudaFreeHost(c));
  return conformance::finish(ok);
}
