// cublas_gemm: a program that links cuBLAS (libcublas.so.13, which embeds
// its own static CUDA runtime and whose libcublasLt looks up the driver from
// its ELF constructor) and multiplies two matrices with it.
#include "conformance.h"
#include "gemm.h"

int main(int argc, char** argv) {
  sample::name() = "cublas_gemm";
  const sample::Flags flags(argc, argv, {"n="}, "[--n=N]");
  return conformance_gemm(static_cast<int>(flags.get("n", 256)));
}
