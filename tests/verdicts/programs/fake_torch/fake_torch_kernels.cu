// The fake libtorch's one kernel (fake_torch.h): what a forward op queues.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#include "fake_torch.h"

namespace {

__global__ void fill_kernel(float* data, int n, float value) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = value;
}

}  // namespace

namespace at::native {

constexpr int kFillBlocks = 16384;

// A grid wide enough that the kernel takes a while on simgpu (it times
// kernels by the threads launched); only the tensor's elements are written.
void fill_(Tensor& self, float value) {
  fill_kernel<<<kFillBlocks, 256>>>(self.data(), static_cast<int>(self.numel()), value);
  if (cudaGetLastError() != cudaSuccess) {
    std::fprintf(stderr, "fake_torch: fill_kernel launch failed\n");
    std::exit(1);
  }
}

}  // namespace at::native
