// hyperq: many independent streams at once.  Each of --streams streams runs
// two dependent kernels that spin for a while; with concurrent kernel
// execution the streams overlap instead of queueing one behind the other.
// A final kernel on the legacy default stream (which waits for all of them)
// adds up how long every kernel spun.
#include <vector>

#include "conformance.h"

__device__ void spin(long long* out, long long clocks) {
  const long long start = clock64();
  long long now = start;
  while (now - start < clocks) now = clock64();
  *out = now - start;
}
__global__ void kernel_a(long long* out, long long clocks) { spin(out, clocks); }
__global__ void kernel_b(long long* out, long long clocks) { spin(out, clocks); }

__global__ void sum(long long* clocks, int n) {
  long long total = 0;
  if (threadIdx.x == 0) {
    for (int i = 0; i < n; ++i) total += clocks[i];
    clocks[0] = total;
  }
}

int main(int argc, char** argv) {
  sample::name() = "hyperq";
  const sample::Flags flags(argc, argv, {"streams=", "us="}, "[--streams=S] [--us=MICROSECONDS per kernel]");
  const int nstreams = static_cast<int>(flags.get("streams", 32));
  const long us = flags.get("us", 1000);
  std::printf("[hyperq] %d streams, two %ld-microsecond kernels each\n", nstreams, us);

  int device = 0, clock_khz = 0;
  checkCudaErrors(cudaGetDevice(&device));
  checkCudaErrors(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device));
  const long long clocks = static_cast<long long>(clock_khz) * us / 1000;

  long long* d_clocks = nullptr;
  const size_t bytes = 2 * nstreams * sizeof(long long);
  checkCudaErrors(cudaMalloc(&d_clocks, bytes));
  checkCudaErrors(cudaMemset(d_clocks, 0, bytes));
  std::vector<cudaStream_t> streams(nstreams);
  for (auto& s : streams) checkCudaErrors(cudaStreamCreate(&s));
  conformance::EventTimer timer;

  timer.start();
  for (int i = 0; i < nstreams; ++i) {
    kernel_a<<<1, 1, 0, streams[i]>>>(&d_clocks[2 * i], clocks);
    kernel_b<<<1, 1, 0, streams[i]>>>(&d_clocks[2 * i + 1], clocks);
  }
  sum<<<1, 32>>>(d_clocks, 2 * nstreams);
  getLastCudaError("sum");
  const float ms = timer.stop_ms();
  std::printf("Measured time for sample = %.3f s (serialized it would take %.3f s)\n", ms / 1000.0,
              2.0 * nstreams * us / 1e6);

  long long total = -1;
  checkCudaErrors(cudaMemcpy(&total, d_clocks, sizeof(total), cudaMemcpyDeviceToHost));
  // Every kernel spun at least its clocks; the cleared memory came back otherwise.
  const bool ok = conformance::kernel_results_checkable() ? total >= 2 * nstreams * clocks : total == 0;
  if (!ok) std::fprintf(stderr, "hyperq: the kernels spun %lld clocks in all, expected %lld\n", total, 2 * nstreams * clocks);

  for (auto& s : streams) checkCudaErrors(cudaStreamDestroy(s));
  timer.release();
  checkCudaErrors(cudaFree(d_clocks));
  return conformance::finish(ok);
}
