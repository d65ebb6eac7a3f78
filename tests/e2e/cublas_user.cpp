// A program that merely links cuBLAS (the toolkit's libcublas.so.13):
// libcublasLt's constructor looks up cuInit with dlsym before any
// constructor of a preloaded library has run. On simgpu cublasCreate fails
// (cuBLAS needs the driver's private export tables); traced or not, the
// program must print and return the same.
#include <cublas_v2.h>

#include <cstdio>

int main() {
  cublasHandle_t handle = nullptr;
  const cublasStatus_t status = cublasCreate(&handle);
  std::printf("cublasCreate: %d\n", static_cast<int>(status));
  if (status != CUBLAS_STATUS_SUCCESS) return 3;
  cublasDestroy(handle);
  return 0;
}
