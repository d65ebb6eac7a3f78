// Native code that Python calls through ctypes, for the Python-stack tests
// (tests/python/check_python_stacks.py): kernels queued from a native
// library, and a callback into Python made from one. Their frames must
// show as native frames between the Python frames around them.
#include <cuda_runtime.h>

#include <vector>

namespace {

// A fixed trip count: simgpu's device model times a kernel from its code.
constexpr int kRounds = 64;

__global__ void busy_chain(float* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  float x = out[i];
  for (int k = 0; k < kRounds; ++k) x = fmaf(x, 0.99993f, 1e-4f);
  out[i] = x;
}

float* g_buffer = nullptr;
constexpr int kThreads = 1 << 20;

}  // namespace

// One step's input copied from pageable host memory (the slow kind, so the
// copies dominate the run and a finding cites them), then `count` kernels
// queued on the default stream without waiting for them.
extern "C" int queue_work(int count) {
  static std::vector<float> input(kThreads * 4);
  if (g_buffer == nullptr && cudaMalloc(&g_buffer, input.size() * sizeof(float)) != cudaSuccess) return 1;
  if (cudaMemcpy(g_buffer, input.data(), input.size() * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess) return 2;
  for (int i = 0; i < count; ++i) busy_chain<<<kThreads / 256, 256>>>(g_buffer);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}

// Calls back into Python; not a tail call, so this frame stays on the stack.
extern "C" __attribute__((noinline)) int run_callback(int (*callback)(void)) {
  const int result = callback();
  __asm__ volatile("" ::: "memory");
  return result;
}
