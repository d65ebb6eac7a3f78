// sync_bound: a loop of small kernels with a cudaDeviceSynchronize after
// every one.  Each step pays launch latency, the kernel, and the wake-up of
// the synchronize in series; the GPU idles between steps while the host
// waits, so the run is bounded by synchronization, not by work.
//
// --fixed: the same steps launched asynchronously, each work slot on its own
// stream (so independent slots may overlap), and one synchronize at the end.
#include <cmath>
#include <vector>

#include "common.hpp"

namespace {

constexpr int kBlocks = 64, kThreads = 256, kElems = kBlocks * kThreads;

// One small step of a slot's iterative update.
__host__ __device__ inline float step(float x, int iter) { return x * 0.999f + 0.001f * static_cast<float>(iter & 7); }

__global__ void small_step(float* slot, int iter) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < kElems) slot[i] = step(slot[i], iter);
}

void run(float* d_slots, int iters, int slots, bool fixed) {
  std::vector<cudaStream_t> streams(slots);
  if (fixed)
    for (cudaStream_t& s : streams) CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (int i = 0; i < iters; ++i) {
    const int slot = i % slots;
    small_step<<<kBlocks, kThreads, 0, fixed ? streams[slot] : nullptr>>>(d_slots + size_t(slot) * kElems, i);
    CHECK_LAUNCH(small_step);
    if (!fixed) CHECK(cudaDeviceSynchronize());  // the habit this sample is about
  }
  CHECK(cudaDeviceSynchronize());
  if (fixed)
    for (cudaStream_t s : streams) CHECK(cudaStreamDestroy(s));
}

}  // namespace

int main(int argc, char** argv) {
  sample::name() = "sync_bound";
  const sample::Flags flags(argc, argv, {"iters=", "slots=", "fixed"}, "[--iters N] [--slots S] [--fixed]");
  const int iters = static_cast<int>(flags.get("iters", 120000));
  const int slots = static_cast<int>(flags.get("slots", 4));
  const bool fixed = flags.has("fixed");
  std::vector<float> initial(size_t(slots) * kElems);
  for (size_t i = 0; i < initial.size(); ++i) initial[i] = static_cast<float>(sample::mix(i) & 0xfff) / 4096.0f;
  float* d_slots = nullptr;
  CHECK(cudaMalloc(&d_slots, initial.size() * sizeof(float)));
  CHECK(cudaMemcpy(d_slots, initial.data(), initial.size() * sizeof(float), cudaMemcpyHostToDevice));

  const sample::Stopwatch watch;
  run(d_slots, iters, slots, fixed);
  const double seconds = watch.seconds();

  std::vector<float> result(initial.size());
  CHECK(cudaMemcpy(result.data(), d_slots, result.size() * sizeof(float), cudaMemcpyDeviceToHost));
  if (sample::kernels_compute()) {
    // Replay the first elements of every slot on the CPU.
    for (int slot = 0; slot < slots; ++slot) {
      for (int e = 0; e < 4; ++e) {
        float x = initial[size_t(slot) * kElems + e];
        for (int i = slot; i < iters; i += slots) x = step(x, i);
        sample::expect(std::fabs(result[size_t(slot) * kElems + e] - x) <= 1e-3f * (1.0f + std::fabs(x)), "slot value");
      }
    }
  } else {
    sample::expect(result == initial, "slot data round trip");  // simgpu: kernels leave memory as copied
  }
  CHECK(cudaFree(d_slots));
  sample::report("%d steps (%s) in %.3f s, %.1f us per step", iters,
                 fixed ? "async on streams, one synchronize" : "synchronize after each", seconds, seconds / iters * 1e6);
  return 0;
}
