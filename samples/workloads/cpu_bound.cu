// cpu_bound: an input pipeline whose single-threaded host preprocessing
// ("tokenizing" each batch) takes far longer than the GPU needs to consume
// it, so the GPU sits idle waiting for the CPU.
//
// --fixed: preprocessing split across all cores and overlapped with the GPU
// (double-buffered pinned staging, one stream): while the GPU consumes batch
// b, the CPU prepares batch b+1.
#include <algorithm>
#include <thread>
#include <vector>

#include "common.hpp"

namespace {

constexpr int kThreads = 256;
constexpr int kRounds = 24;  // mixing rounds per item: the CPU cost of "tokenizing"

unsigned tokenize(unsigned batch, unsigned item) {
  unsigned x = batch * 0x01000193u ^ item;
  for (int r = 0; r < kRounds; ++r) x = sample::mix(x + r);
  return x;
}

void preprocess(unsigned batch, unsigned* out, size_t begin, size_t end) {
  for (size_t i = begin; i < end; ++i) out[i] = tokenize(batch, static_cast<unsigned>(i));
}

void preprocess_parallel(unsigned batch, unsigned* out, size_t n, unsigned workers) {
  std::vector<std::thread> pool;
  for (unsigned w = 1; w < workers; ++w) pool.emplace_back(preprocess, batch, out, n * w / workers, n * (w + 1) / workers);
  preprocess(batch, out, 0, n / workers);
  for (std::thread& t : pool) t.join();
}

// The GPU's share: fold the batch's tokens into one checksum.
__global__ void consume_batch(const unsigned* tokens, size_t n, unsigned* checksum) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(checksum, tokens[i] * 2654435761u);
}

struct Pipeline {
  int batches;
  size_t items;
  unsigned workers;
  unsigned* staging[2];
  unsigned* d_tokens[2];
  unsigned* d_checksum;
};

void launch(const Pipeline& p, int slot, cudaStream_t s) {
  CHECK(cudaMemcpyAsync(p.d_tokens[slot], p.staging[slot], p.items * sizeof(unsigned), cudaMemcpyHostToDevice, s));
  consume_batch<<<static_cast<unsigned>((p.items + kThreads - 1) / kThreads), kThreads, 0, s>>>(p.d_tokens[slot], p.items,
                                                                                               p.d_checksum);
  CHECK_LAUNCH(consume_batch);
}

void run_unfixed(const Pipeline& p) {
  for (int b = 0; b < p.batches; ++b) {
    preprocess(b, p.staging[0], 0, p.items);  // one core; the GPU waits
    launch(p, 0, nullptr);
    CHECK(cudaStreamSynchronize(nullptr));
  }
}

void run_fixed(const Pipeline& p) {
  cudaStream_t s;
  cudaEvent_t consumed[2];
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (cudaEvent_t& e : consumed) CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  for (int b = 0; b < p.batches; ++b) {
    const int slot = b % 2;
    CHECK(cudaEventSynchronize(consumed[slot]));  // the copy out of this staging buffer is done
    preprocess_parallel(b, p.staging[slot], p.items, p.workers);
    launch(p, slot, s);
    CHECK(cudaEventRecord(consumed[slot], s));
  }
  CHECK(cudaStreamSynchronize(s));
  for (cudaEvent_t e : consumed) CHECK(cudaEventDestroy(e));
  CHECK(cudaStreamDestroy(s));
}

unsigned expected_checksum(const Pipeline& p) {
  unsigned sum = 0;
  for (int b = 0; b < p.batches; ++b)
    for (size_t i = 0; i < p.items; ++i) sum += tokenize(b, static_cast<unsigned>(i)) * 2654435761u;
  return sum;
}

}  // namespace

int main(int argc, char** argv) {
  sample::name() = "cpu_bound";
  const sample::Flags flags(argc, argv, {"batches=", "items=", "threads=", "fixed"},
                            "[--batches N] [--items K] [--threads T] [--fixed]");
  const bool fixed = flags.has("fixed");
  Pipeline p{};
  p.batches = static_cast<int>(flags.get("batches", 200));
  p.items = static_cast<size_t>(flags.get("items", 65536));
  p.workers = static_cast<unsigned>(flags.get("threads", std::max(1u, std::thread::hardware_concurrency())));
  for (int i = 0; i < 2; ++i) {
    CHECK(cudaMallocHost(&p.staging[i], p.items * sizeof(unsigned)));
    CHECK(cudaMalloc(&p.d_tokens[i], p.items * sizeof(unsigned)));
  }
  CHECK(cudaMalloc(&p.d_checksum, sizeof(unsigned)));
  CHECK(cudaMemset(p.d_checksum, 0, sizeof(unsigned)));

  const sample::Stopwatch watch;
  fixed ? run_fixed(p) : run_unfixed(p);
  const double seconds = watch.seconds();

  // The last batch's tokens reached the device intact; where kernels ran,
  // the device's checksum matches the CPU's.
  const int last_slot = fixed ? (p.batches - 1) % 2 : 0;
  std::vector<unsigned> tokens(p.items);
  CHECK(cudaMemcpy(tokens.data(), p.d_tokens[last_slot], p.items * sizeof(unsigned), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < p.items; i += 97) sample::expect(tokens[i] == tokenize(p.batches - 1, i), "staged tokens");
  if (sample::kernels_compute()) {
    unsigned checksum = 0;
    CHECK(cudaMemcpy(&checksum, p.d_checksum, sizeof checksum, cudaMemcpyDeviceToHost));
    sample::expect(checksum == expected_checksum(p), "token checksum");
  }
  for (int i = 0; i < 2; ++i) {
    CHECK(cudaFreeHost(p.staging[i]));
    CHECK(cudaFree(p.d_tokens[i]));
  }
  CHECK(cudaFree(p.d_checksum));
  sample::report("%d batches of %zu items (%s) in %.3f s", p.batches, p.items,
                 fixed ? "parallel preprocessing overlapped with the GPU" : "single-threaded preprocessing", seconds);
  return 0;
}
