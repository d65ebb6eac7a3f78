// The work both graph programs put in their graphs: out = in * factor + 1.
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

// The downloaded result: in * factor + 1 where kernels ran, else the zeros
// the output was cleared to.
inline bool check_scaled(const float* in, const float* out, int n, bool computed, float factor) {
  for (int i = 0; i < n; ++i)
    if (out[i] != (computed ? in[i] * factor + 1.0f : 0.0f)) {
      std::fprintf(stderr, "%s: element %d is %f (factor %g)\n", sample::name(), i, out[i], factor);
      return false;
    }
  return true;
}
