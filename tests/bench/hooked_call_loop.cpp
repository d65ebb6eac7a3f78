// A plain CUDA program for measuring what gpuscope adds to one hooked call:
// run it once as is and once under libgpuscope.so (scripts/bench.sh does
// both, on simgpu or a real GPU) and subtract.
//   hooked_call_loop get_device N      cudaGetDevice: no stack captured
//   hooked_call_loop stream_sync N     cudaStreamSynchronize on an idle stream,
//                                      32 frames deep: stack captured
//   hooked_call_loop malloc_free N     malloc(64) and free, no CUDA call: the
//                                      loop other interposers (heaptrack) are
//                                      timed on (scripts/bench-interceptors.sh)
// An optional third argument, PAUSE_MS, sleeps that long between the 7 runs
// (outside the timing) so gpuscope's writer drains the thread's buffer: with
// N small enough for the buffer (20 000 calls fit the default 1 MiB), every
// call of a run is recorded. Without pauses a loop of 30 ns calls outruns
// the writer, and most records take the drop-and-count path instead
// (`gpuscope info`: "dropped ... thread buffer full").
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

__attribute__((noinline)) double time_get_device(long n) {
  int d = 0;
  const auto t0 = Clock::now();
  for (long i = 0; i < n; ++i) cudaGetDevice(&d);
  return std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / n;
}

__attribute__((noinline)) double sync_loop(long n, cudaStream_t s) {
  const auto t0 = Clock::now();
  for (long i = 0; i < n; ++i) cudaStreamSynchronize(s);
  return std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / n;
}

__attribute__((noinline)) double malloc_free_loop(long n) {
  const auto t0 = Clock::now();
  for (long i = 0; i < n; ++i) {
    void* p = std::malloc(64);
    asm volatile("" : : "r"(p) : "memory");  // the allocation must happen
    std::free(p);
  }
  return std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / n;
}

// Recurses so the synchronize happens about 32 frames below main.
__attribute__((noinline)) double deep(int depth, long n, cudaStream_t s) {
  const double r = depth == 0 ? sync_loop(n, s) : deep(depth - 1, n, s);
  asm volatile("" ::: "memory");  // keep the frames
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr, "usage: hooked_call_loop get_device|stream_sync|malloc_free ITERATIONS [PAUSE_MS]\n");
    return 2;
  }
  const long n = std::atol(argv[2]);
  const bool sync = std::strcmp(argv[1], "stream_sync") == 0;
  const bool allocate = std::strcmp(argv[1], "malloc_free") == 0;
  cudaStream_t stream = nullptr;
  if (cudaStreamCreate(&stream) != cudaSuccess) return 1;
  const long pause_ms = argc == 4 ? std::atol(argv[3]) : 0;
  std::vector<double> runs;
  for (int r = 0; r < 7; ++r) {
    if (pause_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
    runs.push_back(sync ? deep(28, n, stream) : allocate ? malloc_free_loop(n) : time_get_device(n));
  }
  std::sort(runs.begin(), runs.end());
  std::printf("%s: %.1f ns per call (median of 7 runs of %ld)\n", argv[1], runs[3], n);
  cudaStreamDestroy(stream);
  return 0;
}
