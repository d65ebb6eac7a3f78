// occupancy: let the runtime choose the launch configuration.  The
// occupancy calculator suggests a block size for a kernel, the program
// reports the theoretical occupancy of that choice and of a fixed 32-thread
// block, and launches the kernel both ways over the same array.
#include <vector>

#include "conformance.h"

__global__ void square(int* a, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] *= a[i];
}

// Share of the multiprocessor's thread slots a launch with this block size keeps busy.
double occupancy_of(int block, const cudaDeviceProp& prop) {
  int blocks_per_sm = 0;
  checkCudaErrors(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, square, block, 0));
  return static_cast<double>(blocks_per_sm * block) / prop.maxThreadsPerMultiProcessor;
}

int main(int argc, char** argv) {
  sample::name() = "occupancy";
  const sample::Flags flags(argc, argv, {"n="}, "[--n=INTS]");
  const int n = static_cast<int>(flags.get("n", 1 << 20));
  const size_t bytes = n * sizeof(int);
  std::printf("[occupancy] squaring %d ints\n", n);

  int device = 0;
  cudaDeviceProp prop;
  checkCudaErrors(cudaGetDevice(&device));
  checkCudaErrors(cudaGetDeviceProperties(&prop, device));

  int min_grid = 0, block = 0;
  checkCudaErrors(cudaOccupancyMaxPotentialBlockSize(&min_grid, &block, square, 0, n));
  std::printf("suggested block size %d (minimum grid %d): occupancy %.0f%%\n", block, min_grid,
              100 * occupancy_of(block, prop));
  std::printf("fixed block size 32: occupancy %.0f%%\n", 100 * occupancy_of(32, prop));

  std::vector<int> host(n), back(n);
  for (int i = 0; i < n; ++i) host[i] = i % 1000;
  int* d = nullptr;
  checkCudaErrors(cudaMalloc(&d, bytes));
  checkCudaErrors(cudaMemcpy(d, host.data(), bytes, cudaMemcpyHostToDevice));
  square<<<(n + block - 1) / block, block>>>(d, n);
  getLastCudaError("square (suggested configuration)");
  square<<<(n + 31) / 32, 32>>>(d, n);
  getLastCudaError("square (32-thread blocks)");
  checkCudaErrors(cudaDeviceSynchronize());
  checkCudaErrors(cudaMemcpy(back.data(), d, bytes, cudaMemcpyDeviceToHost));

  // Squared twice where kernels ran; the upload itself otherwise.
  const bool computed = sample::kernels_compute(prop);
  if (!computed) std::printf("kernel results not checked: kernels do not execute on %s\n", prop.name);
  bool ok = true;
  for (int i = 0; i < n && ok; ++i) {
    const long long v = host[i];
    if (back[i] != (computed ? static_cast<int>(v * v * v * v) : host[i])) {
      std::fprintf(stderr, "occupancy: element %d is %d\n", i, back[i]);
      ok = false;
    }
  }
  checkCudaErrors(cudaFree(d));
  return conformance::finish(ok);
}
