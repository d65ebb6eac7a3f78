// One cublasSgemm, the way a program that merely uses cuBLAS does it: the
// matrices are allocated and uploaded with the CUDA runtime, a cuBLAS handle
// multiplies them, the result comes back and is compared with the CPU's.
#include <cublas_v2.h>

#include <cmath>
#include <vector>

#include "conformance.h"
#include "gemm.h"

extern "C" __attribute__((visibility("default"))) int conformance_gemm(int n) {
  std::printf("[gemm] %d x %d SGEMM through cuBLAS\n", n, n);
  const size_t elements = size_t(n) * n, bytes = elements * sizeof(float);
  std::vector<float> a(elements), b(elements), c(elements), reference(elements);
  conformance::fill(a.data(), elements, 11);
  conformance::fill(b.data(), elements, 12);
  for (float& v : a) v /= 256.0f;
  for (float& v : b) v /= 256.0f;

  float *d_a, *d_b, *d_c;
  checkCudaErrors(cudaMalloc(&d_a, bytes));
  checkCudaErrors(cudaMalloc(&d_b, bytes));
  checkCudaErrors(cudaMalloc(&d_c, bytes));
  checkCudaErrors(cudaMemcpy(d_a, a.data(), bytes, cudaMemcpyHostToDevice));
  checkCudaErrors(cudaMemcpy(d_b, b.data(), bytes, cudaMemcpyHostToDevice));

  cublasHandle_t handle;
  const cublasStatus_t status = cublasCreate(&handle);
  if (status != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "CUBLAS initialization error: %s\n", cublasGetStatusString(status));
    std::printf("cuBLAS could not be initialized\n");
    std::fflush(stdout);
    return EXIT_FAILURE;
  }
  const float alpha = 1.0f, beta = 0.0f;
  const cublasStatus_t gemm = cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, d_a, n, d_b, n, &beta, d_c, n);
  if (gemm != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "cublasSgemm failed: %s\n", cublasGetStatusString(gemm));
    return EXIT_FAILURE;
  }
  checkCudaErrors(cudaMemcpy(c.data(), d_c, bytes, cudaMemcpyDeviceToHost));

  // Column-major, as cuBLAS: C(i,j) = sum_k A(i,k) B(k,j).
  double worst = 0;
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) {
      double sum = 0;
      for (int k = 0; k < n; ++k) sum += double(a[size_t(k) * n + i]) * b[size_t(j) * n + k];
      worst = std::fmax(worst, std::fabs(sum - c[size_t(j) * n + i]) / (std::fabs(sum) + 1e-6));
    }
  const bool ok = worst < 1e-4;
  if (!ok) std::fprintf(stderr, "gemm: relative error %g\n", worst);

  if (cublasDestroy(handle) != CUBLAS_STATUS_SUCCESS) return EXIT_FAILURE;
  checkCudaErrors(cudaFree(d_a));
  checkCudaErrors(cudaFree(d_b));
  checkCudaErrors(cudaFree(d_c));
  return conformance::finish(ok);
}
