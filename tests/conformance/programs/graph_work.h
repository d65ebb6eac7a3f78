// What both graph programs share: the buffers and stream their graphs use,
// and the work in the graphs, out = in * factor + 1.
#pragma once

#include "conformance.h"

__global__ void scale(const float* in, float* out, float factor, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * factor;
}

__global__ void offset(float* data, float add, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += add;
}

// Pinned input and output, their device copies, a non-blocking stream:
// two cudaHostAlloc (cudaMallocHost's C++ form), two cudaMalloc and one
// cudaStreamCreateWithFlags; release() undoes them.
struct GraphBuffers {
  int n;
  size_t bytes;
  float *h_in, *h_out, *d_in, *d_out;
  cudaStream_t stream;

  GraphBuffers(int elements, unsigned seed) : n(elements), bytes(elements * sizeof(float)) {
    checkCudaErrors(cudaMallocHost(&h_in, bytes));
    checkCudaErrors(cudaMallocHost(&h_out, bytes));
    checkCudaErrors(cudaMalloc(&d_in, bytes));
    checkCudaErrors(cudaMalloc(&d_out, bytes));
    checkCudaErrors(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    conformance::fill(h_in, n, seed);
  }

  void release() {
    checkCudaErrors(cudaStreamDestroy(stream));
    checkCudaErrors(cudaFreeHost(h_in));
    checkCudaErrors(cudaFreeHost(h_out));
    checkCudaErrors(cudaFree(d_in));
    checkCudaErrors(cudaFree(d_out));
  }

  // Launches the executable graph `launches` times, waits, and checks the
  // downloaded result: in * factor + 1 where kernels ran, else the zeros
  // the output was cleared to.
  bool launch_and_check(cudaGraphExec_t exec, int launches, bool computed, float factor) {
    for (int l = 0; l < launches; ++l) checkCudaErrors(cudaGraphLaunch(exec, stream));
    checkCudaErrors(cudaStreamSynchronize(stream));
    for (int i = 0; i < n; ++i)
      if (h_out[i] != (computed ? h_in[i] * factor + 1.0f : 0.0f)) {
        std::fprintf(stderr, "%s: element %d is %f (factor %g)\n", sample::name(), i, h_out[i], factor);
        return false;
      }
    return true;
  }
};
