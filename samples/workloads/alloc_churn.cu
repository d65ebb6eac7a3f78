// alloc_churn: a serving loop whose activation buffer changes size with every
// request, so each iteration does cudaMalloc, a kernel, cudaFree.  cudaMalloc
// costs host time that grows with the size, and cudaFree synchronizes the
// whole device, so the host can never run ahead of the GPU.
//
// --fixed: one pool sized for the largest request, allocated once and reused;
// the loop only launches kernels and synchronizes once at the end.
//
// --expandable: the buffer is one of PyTorch's expandable segments
// (expandable_segment.hpp), grown page by page to each request's size and,
// as torch.cuda.empty_cache() after every step does, given back after it:
// the churn is cuMemCreate/cuMemMap/cuMemSetAccess and, after a
// synchronize, cuMemUnmap/cuMemRelease. With --fixed the pages stay mapped
// and later requests reuse them.
#include <algorithm>
#include <vector>

#include "common.hpp"
#include "expandable_segment.hpp"

namespace {

constexpr int kThreads = 256;

__host__ __device__ inline float activation(unsigned i, int iter) {
  return static_cast<float>(sample::mix(i ^ (iter * 0x9e3779b9u)) & 0xffff) / 65536.0f;
}

// Writes a request's activations; thread 0 also records a per-request
// summary the host checks at the end.
__global__ void fill_activations(float* buf, size_t n, int iter, float* summary) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) buf[i] = activation(static_cast<unsigned>(i), iter);
  if (i == 0) summary[iter] = activation(0, iter) + activation(static_cast<unsigned>(n - 1), iter);
}

// Request sizes vary between 1/16 and all of max_bytes, like batches of
// variable shape.
size_t request_bytes(int iter, size_t max_bytes) {
  const size_t steps = 16;
  return max_bytes / steps * (1 + sample::mix(static_cast<unsigned>(iter)) % steps);
}

void run_expandable(int iters, size_t max_bytes, float* d_summary, bool fixed) {
  sample::ExpandableSegment segment(0, max_bytes);
  for (int i = 0; i < iters; ++i) {
    const size_t bytes = request_bytes(i, max_bytes);
    const size_t n = bytes / sizeof(float);
    segment.grow_to(bytes);
    auto* buf = static_cast<float*>(segment.data());
    fill_activations<<<static_cast<unsigned>((n + kThreads - 1) / kThreads), kThreads>>>(buf, n, i, d_summary);
    CHECK_LAUNCH(fill_activations);
    if (fixed) continue;
    CHECK(cudaDeviceSynchronize());  // empty_cache() waits for the GPU before it unmaps
    segment.shrink_to(0);
  }
  CHECK(cudaDeviceSynchronize());
}

void run(int iters, size_t max_bytes, float* d_summary, bool fixed) {
  float* pool = nullptr;
  if (fixed) CHECK(cudaMalloc(&pool, max_bytes));
  for (int i = 0; i < iters; ++i) {
    const size_t bytes = request_bytes(i, max_bytes);
    const size_t n = bytes / sizeof(float);
    float* buf = pool;
    if (!fixed) CHECK(cudaMalloc(&buf, bytes));  // the churn this sample is about
    fill_activations<<<static_cast<unsigned>((n + kThreads - 1) / kThreads), kThreads>>>(buf, n, i, d_summary);
    CHECK_LAUNCH(fill_activations);
    if (!fixed) CHECK(cudaFree(buf));  // ...and cudaFree waits for the kernel
  }
  CHECK(cudaDeviceSynchronize());
  if (fixed) CHECK(cudaFree(pool));
}

}  // namespace

int main(int argc, char** argv) {
  sample::name() = "alloc_churn";
  const sample::Flags flags(argc, argv, {"iters=", "max-mib=", "fixed", "expandable"},
                            "[--iters N] [--max-mib M] [--fixed] [--expandable]");
  const int iters = static_cast<int>(flags.get("iters", 8000));
  const size_t max_bytes = static_cast<size_t>(flags.get("max-mib", 64)) << 20;
  const bool fixed = flags.has("fixed");
  const bool expandable = flags.has("expandable");

  // The data path works: a pattern survives a round trip through device memory.
  std::vector<float> pattern(4096), back(4096);
  for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = activation(static_cast<unsigned>(i), -1);
  float* d_summary = nullptr;
  CHECK(cudaMalloc(&d_summary, size_t(iters) * sizeof(float)));
  CHECK(cudaMemset(d_summary, 0, size_t(iters) * sizeof(float)));
  CHECK(cudaMemcpy(d_summary, pattern.data(), std::min<size_t>(iters, 4096) * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(back.data(), d_summary, std::min<size_t>(iters, 4096) * sizeof(float), cudaMemcpyDeviceToHost));
  sample::expect(std::equal(back.begin(), back.begin() + std::min(iters, 4096), pattern.begin()), "device round trip");

  const sample::Stopwatch watch;
  if (expandable) run_expandable(iters, max_bytes, d_summary, fixed);
  else run(iters, max_bytes, d_summary, fixed);
  const double seconds = watch.seconds();

  std::vector<float> summary(iters);
  CHECK(cudaMemcpy(summary.data(), d_summary, summary.size() * sizeof(float), cudaMemcpyDeviceToHost));
  if (sample::kernels_compute()) {
    for (int i = 0; i < iters; ++i) {
      const size_t n = request_bytes(i, max_bytes) / sizeof(float);
      sample::expect(summary[i] == activation(0, i) + activation(static_cast<unsigned>(n - 1), i), "request summary");
    }
  }
  CHECK(cudaFree(d_summary));
  const char* how = expandable ? (fixed ? "an expandable segment, kept mapped" : "an expandable segment, emptied each")
                               : (fixed ? "one pool, reused" : "cudaMalloc/cudaFree each");
  sample::report("%d requests of 1/16..%zu MiB (%s) in %.3f s, %.1f us per request", iters, max_bytes >> 20, how,
                 seconds, seconds / iters * 1e6);
  return 0;
}
