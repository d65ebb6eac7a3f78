// atomics: every integer atomic on global memory from many threads at once
// (add, sub, exchange, max, min, wrapping increment and decrement, CAS,
// and, or, xor); the host computes what the eleven words must end as.
#include <vector>

#include "conformance.h"

constexpr int kWords = 11;

__global__ void atomic_ops(int* g) {
  const unsigned tid = blockDim.x * blockIdx.x + threadIdx.x;
  atomicAdd(&g[0], 10);
  atomicSub(&g[1], 10);
  atomicExch(&g[2], static_cast<int>(tid));
  atomicMax(&g[3], static_cast<int>(tid));
  atomicMin(&g[4], static_cast<int>(tid));
  atomicInc(reinterpret_cast<unsigned*>(&g[5]), 17);
  atomicDec(reinterpret_cast<unsigned*>(&g[6]), 137);
  atomicCAS(&g[7], static_cast<int>(tid - 1), static_cast<int>(tid));
  atomicAnd(&g[8], 2 * tid + 7);
  atomicOr(&g[9], 1 << (tid % 31));
  atomicXor(&g[10], static_cast<int>(tid));
}

// What the words hold after `threads` threads ran atomic_ops (only the
// order-independent ones are exact; exchange and CAS are checked for range).
bool check_words(const std::vector<int>& g, unsigned threads) {
  unsigned inc = 0, dec = 0, and_all = 0xff, or_all = 0, xor_all = 0;
  for (unsigned t = 0; t < threads; ++t) {
    inc = inc >= 17 ? 0 : inc + 1;
    dec = (dec == 0 || dec > 137) ? 137 : dec - 1;
    and_all &= 2 * t + 7;
    or_all |= 1u << (t % 31);
    xor_all ^= t;
  }
  const int n = static_cast<int>(threads);
  return g[0] == 10 * n && g[1] == -10 * n && g[2] >= 0 && g[2] < n && g[3] == n - 1 && g[4] == 0 &&
         static_cast<unsigned>(g[5]) == inc && static_cast<unsigned>(g[6]) == dec && g[7] >= 0 && g[7] < n &&
         static_cast<unsigned>(g[8]) == and_all && static_cast<unsigned>(g[9]) == or_all &&
         static_cast<unsigned>(g[10]) == xor_all;
}

int main(int argc, char** argv) {
  sample::name() = "atomics";
  const sample::Flags flags(argc, argv, {"blocks=", "threads="}, "[--blocks=B] [--threads=T]");
  const int blocks = static_cast<int>(flags.get("blocks", 64)), threads = static_cast<int>(flags.get("threads", 256));
  std::printf("[atomics] %d blocks of %d threads on %d words\n", blocks, threads, kWords);

  std::vector<int> words(kWords, 0), back(kWords);
  words[4] = 1 << 30;  // min starts high
  words[8] = 0xff;     // and starts with bits set
  int* d = nullptr;
  checkCudaErrors(cudaMalloc(&d, kWords * sizeof(int)));
  checkCudaErrors(cudaMemcpy(d, words.data(), kWords * sizeof(int), cudaMemcpyHostToDevice));
  atomic_ops<<<blocks, threads>>>(d);
  getLastCudaError("atomic_ops");
  checkCudaErrors(cudaMemcpy(back.data(), d, kWords * sizeof(int), cudaMemcpyDeviceToHost));
  checkCudaErrors(cudaFree(d));

  // Where kernels did not run, the words came back as they went up.
  const bool ok = conformance::kernel_results_checkable() ? check_words(back, blocks * threads) : back == words;
  return conformance::finish(ok);
}
