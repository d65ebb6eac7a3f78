// matrix_mul: C = A x B with shared-memory tiles, the classic first
// performance sample.  Pinned inputs go up on a stream, one warm-up launch,
// then --iters timed launches; prints GFlop/s and checks C on the CPU where
// kernels ran (C is cleared first, so where they did not it must come back
// all zeros).
#include <cmath>
#include <vector>

#include "conformance.h"

constexpr int kTile = 32;

__global__ void matrix_mul_tiled(float* c, const float* a, const float* b, int wa, int wb) {
  __shared__ float as[kTile][kTile];
  __shared__ float bs[kTile][kTile];
  const int row = blockIdx.y * kTile + threadIdx.y;
  const int col = blockIdx.x * kTile + threadIdx.x;
  float sum = 0;
  for (int t = 0; t < wa; t += kTile) {
    as[threadIdx.y][threadIdx.x] = a[row * wa + t + threadIdx.x];
    bs[threadIdx.y][threadIdx.x] = b[(t + threadIdx.y) * wb + col];
    __syncthreads();
    for (int k = 0; k < kTile; ++k) sum += as[threadIdx.y][k] * bs[k][threadIdx.x];
    __syncthreads();
  }
  c[row * wb + col] = sum;
}

int main(int argc, char** argv) {
  sample::name() = "matrix_mul";
  const sample::Flags flags(argc, argv, {"ha=", "wa=", "wb=", "iters="}, "[--ha=ROWS] [--wa=N] [--wb=COLS] [--iters=K]");
  const int ha = static_cast<int>(flags.get("ha", 320)), wa = static_cast<int>(flags.get("wa", 320));
  const int wb = static_cast<int>(flags.get("wb", 640)), iters = static_cast<int>(flags.get("iters", 30));
  if (ha % kTile || wa % kTile || wb % kTile) {
    std::fprintf(stderr, "matrix_mul: dimensions must be multiples of %d\n", kTile);
    return EXIT_FAILURE;
  }
  const size_t bytes_a = size_t(ha) * wa * sizeof(float), bytes_b = size_t(wa) * wb * sizeof(float);
  const size_t bytes_c = size_t(ha) * wb * sizeof(float);
  std::printf("[matrix_mul] MatrixA(%d,%d), MatrixB(%d,%d)\n", wa, ha, wb, wa);

  float *a, *b, *c, *d_a, *d_b, *d_c;
  checkCudaErrors(cudaMallocHost(&a, bytes_a));
  checkCudaErrors(cudaMallocHost(&b, bytes_b));
  checkCudaErrors(cudaMallocHost(&c, bytes_c));
  for (int i = 0; i < ha * wa; ++i) a[i] = 1.0f;
  for (int i = 0; i < wa * wb; ++i) b[i] = 0.01f;
  checkCudaErrors(cudaMalloc(&d_a, bytes_a));
  checkCudaErrors(cudaMalloc(&d_b, bytes_b));
  checkCudaErrors(cudaMalloc(&d_c, bytes_c));
  cudaStream_t stream;
  checkCudaErrors(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  conformance::EventTimer timer;

  checkCudaErrors(cudaMemcpyAsync(d_a, a, bytes_a, cudaMemcpyHostToDevice, stream));
  checkCudaErrors(cudaMemcpyAsync(d_b, b, bytes_b, cudaMemcpyHostToDevice, stream));
  checkCudaErrors(cudaMemsetAsync(d_c, 0, bytes_c, stream));
  const dim3 threads(kTile, kTile), grid(wb / kTile, ha / kTile);
  std::printf("Computing result using CUDA Kernel...\n");
  matrix_mul_tiled<<<grid, threads, 0, stream>>>(d_c, d_a, d_b, wa, wb);
  getLastCudaError("matrix_mul_tiled (warm-up)");
  checkCudaErrors(cudaStreamSynchronize(stream));

  timer.start(stream);
  for (int k = 0; k < iters; ++k) matrix_mul_tiled<<<grid, threads, 0, stream>>>(d_c, d_a, d_b, wa, wb);
  const double per_launch = timer.stop_ms(stream) / iters, flops = 2.0 * ha * wa * wb;
  std::printf("Performance= %.2f GFlop/s, Time= %.3f msec, Size= %.0f Ops, WorkgroupSize= %u threads/block\n",
              flops * 1.0e-9 / (per_launch / 1000.0), per_launch, flops, threads.x * threads.y);

  checkCudaErrors(cudaMemcpyAsync(c, d_c, bytes_c, cudaMemcpyDeviceToHost, stream));
  checkCudaErrors(cudaStreamSynchronize(stream));
  std::printf("Checking computed result for correctness: ");
  const bool computed = sample::kernels_compute();
  const float want = computed ? wa * 0.01f : 0.0f;
  bool ok = true;
  for (int i = 0; i < ha * wb && ok; ++i)
    if (std::fabs(c[i] - want) > 1e-6 * wa + (computed ? 1e-3f : 0.0f)) {
      std::fprintf(stderr, "matrix_mul: C[%d] = %f, expected %f\n", i, c[i], want);
      ok = false;
    }
  std::printf("%s\n", ok ? "Result = PASS" : "Result = FAIL");

  timer.release();
  checkCudaErrors(cudaStreamDestroy(stream));
  checkCudaErrors(cudaFreeHost(a));
  checkCudaErrors(cudaFreeHost(b));
  checkCudaErrors(cudaFreeHost(c));
  checkCudaErrors(cudaFree(d_a));
  checkCudaErrors(cudaFree(d_b));
  checkCudaErrors(cudaFree(d_c));
  return conformance::finish(ok);
}
