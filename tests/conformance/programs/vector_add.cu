// vector_add: c = a + b over --n floats, the first program of every CUDA
// course.  Three device arrays, a and b copied up, one launch, c copied
// back; a is copied back too, to check the upload itself.
#include <vector>

#include "conformance.h"

__global__ void vectorAdd(const float* a, const float* b, float* c, int n) {
  const int i = blockDim.x * blockIdx.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

int main(int argc, char** argv) {
  sample::name() = "vector_add";
  const sample::Flags flags(argc, argv, {"n="}, "[--n=ELEMENTS]");
  const int n = static_cast<int>(flags.get("n", 50000));
  const size_t bytes = n * sizeof(float);
  std::printf("[Vector addition of %d elements]\n", n);

  std::vector<float> a(n), b(n), c(n), a_back(n);
  conformance::fill(a.data(), n, 1);
  conformance::fill(b.data(), n, 2);

  float *d_a = nullptr, *d_b = nullptr, *d_c = nullptr;
  checkCudaErrors(cudaMalloc(&d_a, bytes));
  checkCudaErrors(cudaMalloc(&d_b, bytes));
  checkCudaErrors(cudaMalloc(&d_c, bytes));

  std::printf("Copy input data from the host memory to the CUDA device\n");
  checkCudaErrors(cudaMemcpy(d_a, a.data(), bytes, cudaMemcpyHostToDevice));
  checkCudaErrors(cudaMemcpy(d_b, b.data(), bytes, cudaMemcpyHostToDevice));

  const int threads = 256;
  const int blocks = (n + threads - 1) / threads;
  std::printf("CUDA kernel launch with %d blocks of %d threads\n", blocks, threads);
  vectorAdd<<<blocks, threads>>>(d_a, d_b, d_c, n);
  getLastCudaError("vectorAdd");

  std::printf("Copy output data from the CUDA device to the host memory\n");
  checkCudaErrors(cudaMemcpy(c.data(), d_c, bytes, cudaMemcpyDeviceToHost));
  checkCudaErrors(cudaMemcpy(a_back.data(), d_a, bytes, cudaMemcpyDeviceToHost));

  bool ok = a_back == a;
  if (!ok) std::fprintf(stderr, "vector_add: the copy of a read back differs from a\n");
  if (conformance::kernel_results_checkable()) {
    for (int i = 0; i < n && ok; ++i)
      if (c[i] != a[i] + b[i]) {
        std::fprintf(stderr, "vector_add: result verification failed at element %d\n", i);
        ok = false;
      }
  }

  checkCudaErrors(cudaFree(d_a));
  checkCudaErrors(cudaFree(d_b));
  checkCudaErrors(cudaFree(d_c));
  std::printf("Done\n");
  return conformance::finish(ok);
}
