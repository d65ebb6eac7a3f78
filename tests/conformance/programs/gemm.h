// The cuBLAS part shared by cublas_gemm (linked in) and cublas_plugin (a
// plugin the program dlopens).
#pragma once

// C = A x B for n x n single-precision matrices with cublasSgemm; returns
// the exit status a sample would end with.
extern "C" int conformance_gemm(int n);
