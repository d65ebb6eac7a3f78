// pcie_bound: the "90% busy" search service.  Each request copies its query
// features host-to-device from pageable memory, scores every document on the
// GPU, copies all the scores back and picks the best one on the CPU -- so the
// request loop waits on PCIe copies (and CPU post-processing), not on the GPU.
//
// --fixed: request inputs live in pinned memory, requests are batched into one
// copy each, top-1 is computed on the GPU and results stay resident on the
// device until one small copy at the end; two streams overlap copies with
// scoring.
#include <algorithm>
#include <vector>

#include "common.hpp"

namespace {

constexpr int kThreads = 256;
// Distinct request inputs, reused round-robin.  Few enough that simgpu's real
// memmoves stay in cache and the modeled PCIe time, not host memory
// bandwidth, sets the pace.
constexpr int kPool = 4;

// Score of document i for request r: deterministic, so the CPU can check it.
__host__ __device__ inline float score(const float* in, int in_len, int i, int r) {
  return in[i % in_len] * 0.5f + static_cast<float>((sample::mix(i * 2654435761u + r)) & 1023) / 1024.0f;
}

// blockIdx.y selects the request within a batch (1 when unbatched).
__global__ void score_documents(const float* in, int in_len, float* scores, int docs, int first_request) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int req = blockIdx.y;
  if (i < docs) scores[size_t(req) * docs + i] = score(in + size_t(req) * in_len, in_len, i, first_request + req);
}

// One block per request: the index of its best-scoring document.
__global__ void top1_per_request(const float* scores, int docs, int* best) {
  __shared__ float top[kThreads];
  __shared__ int where[kThreads];
  const float* s = scores + size_t(blockIdx.x) * docs;
  float v = -1.0f;
  int at = 0;
  for (int i = threadIdx.x; i < docs; i += blockDim.x)
    if (s[i] > v) v = s[i], at = i;
  top[threadIdx.x] = v;
  where[threadIdx.x] = at;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) {
      const int o = threadIdx.x + stride;
      if (top[o] > top[threadIdx.x] || (top[o] == top[threadIdx.x] && where[o] < where[threadIdx.x]))
        top[threadIdx.x] = top[o], where[threadIdx.x] = where[o];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) best[blockIdx.x] = where[0];
}

struct Config {
  int requests, in_len, docs, batch;
};

// Two passes, the first a plain max the compiler vectorizes: the CPU side is
// as fast as such a post-processing step gets, and still in the way.
int argmax(const float* v, int n) {
  float top = v[0];
  for (int i = 1; i < n; ++i) top = v[i] > top ? v[i] : top;
  return static_cast<int>(std::find(v, v + n, top) - v);
}

int reference_best(const float* in, const Config& c, int r) {
  std::vector<float> s(c.docs);
  for (int i = 0; i < c.docs; ++i) s[i] = score(in, c.in_len, i, r);
  return argmax(s.data(), c.docs);
}

void fill_inputs(float* pool, const Config& c) {
  for (size_t i = 0; i < size_t(kPool) * c.in_len; ++i) pool[i] = static_cast<float>(sample::mix(i) & 0xffff) / 65536.0f;
}

// The service as first written: one request at a time, pageable buffers,
// scores copied back for the CPU to pick the winner.
std::vector<int> serve_unfixed(const Config& c, const float* pool, float* d_in) {
  std::vector<float> scores(c.docs);
  std::vector<int> best(c.requests);
  float* d_scores = nullptr;
  CHECK(cudaMalloc(&d_scores, size_t(c.docs) * sizeof(float)));
  const dim3 grid((c.docs + kThreads - 1) / kThreads);
  for (int r = 0; r < c.requests; ++r) {
    const float* in = pool + size_t(r % kPool) * c.in_len;
    CHECK(cudaMemcpy(d_in, in, size_t(c.in_len) * sizeof(float), cudaMemcpyHostToDevice));
    score_documents<<<grid, kThreads>>>(d_in, c.in_len, d_scores, c.docs, r);
    CHECK_LAUNCH(score_documents);
    CHECK(cudaMemcpy(scores.data(), d_scores, size_t(c.docs) * sizeof(float), cudaMemcpyDeviceToHost));
    best[r] = argmax(scores.data(), c.docs);  // CPU post-processing
  }
  CHECK(cudaFree(d_scores));
  return best;
}

// The fix: pinned inputs, batched copies, top-1 on the GPU, results resident.
std::vector<int> serve_fixed(const Config& c, const float* pinned_pool, float* d_in) {
  float* d_scores = nullptr;
  int* d_best = nullptr;
  CHECK(cudaMalloc(&d_scores, 2 * size_t(c.batch) * c.docs * sizeof(float)));
  CHECK(cudaMalloc(&d_best, size_t(c.requests) * sizeof(int)));
  cudaStream_t streams[2];
  for (cudaStream_t& s : streams) CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (int first = 0, k = 0; first < c.requests; first += c.batch, ++k) {
    const int n = std::min(c.batch, c.requests - first);
    cudaStream_t s = streams[k % 2];
    float* in = d_in + size_t(k % 2) * c.batch * c.in_len;
    float* scores = d_scores + size_t(k % 2) * c.batch * c.docs;
    // A batch is n consecutive pool entries (kPool is a multiple of the batch).
    CHECK(cudaMemcpyAsync(in, pinned_pool + size_t(first % kPool) * c.in_len, size_t(n) * c.in_len * sizeof(float),
                          cudaMemcpyHostToDevice, s));
    score_documents<<<dim3((c.docs + kThreads - 1) / kThreads, n), kThreads, 0, s>>>(in, c.in_len, scores, c.docs, first);
    CHECK_LAUNCH(score_documents);
    top1_per_request<<<n, kThreads, 0, s>>>(scores, c.docs, d_best + first);
    CHECK_LAUNCH(top1_per_request);
  }
  // The NULL stream does not wait for non-blocking streams: drain them first.
  CHECK(cudaDeviceSynchronize());
  std::vector<int> best(c.requests);
  CHECK(cudaMemcpy(best.data(), d_best, best.size() * sizeof(int), cudaMemcpyDeviceToHost));
  for (cudaStream_t s : streams) CHECK(cudaStreamDestroy(s));
  CHECK(cudaFree(d_best));
  CHECK(cudaFree(d_scores));
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  sample::name() = "pcie_bound";
  const sample::Flags flags(argc, argv, {"requests=", "input-kib=", "docs=", "batch=", "fixed"},
                            "[--requests N] [--input-kib K] [--docs D] [--batch B] [--fixed]");
  Config c{static_cast<int>(flags.get("requests", 16000)), static_cast<int>(flags.get("input-kib", 256) * 256),
           static_cast<int>(flags.get("docs", 16384)), static_cast<int>(flags.get("batch", 4))};
  const bool fixed = flags.has("fixed");
  sample::expect(kPool % c.batch == 0, "--batch must divide 4");
  const size_t pool_bytes = size_t(kPool) * c.in_len * sizeof(float);
  std::vector<float> pageable;
  float* pool = nullptr;
  if (fixed) {
    CHECK(cudaMallocHost(&pool, pool_bytes));
  } else {
    pageable.resize(pool_bytes / sizeof(float));
    pool = pageable.data();
  }
  fill_inputs(pool, c);
  float* d_in = nullptr;
  CHECK(cudaMalloc(&d_in, 2 * size_t(c.batch) * c.in_len * sizeof(float)));
  const sample::Stopwatch watch;
  const std::vector<int> best = fixed ? serve_fixed(c, pool, d_in) : serve_unfixed(c, pool, d_in);
  const double seconds = watch.seconds();

  // The last request's input made it to the device intact (kernels do not
  // write it); where kernels ran, the winners match the CPU's.
  const int last = c.requests - 1;
  const float* last_in = pool + size_t(last % kPool) * c.in_len;
  const float* d_last = fixed ? d_in + size_t((last / c.batch) % 2) * c.batch * c.in_len + size_t(last % c.batch) * c.in_len : d_in;
  std::vector<float> round_trip(c.in_len);
  CHECK(cudaMemcpy(round_trip.data(), d_last, size_t(c.in_len) * sizeof(float), cudaMemcpyDeviceToHost));
  sample::expect(std::equal(round_trip.begin(), round_trip.end(), last_in), "request input round trip");
  if (sample::kernels_compute()) {
    for (int r : {0, 1, last}) sample::expect(best[r] == reference_best(pool + size_t(r % kPool) * c.in_len, c, r), "top-1 document");
  }
  CHECK(cudaFree(d_in));
  if (fixed) CHECK(cudaFreeHost(pool));
  sample::report("%d requests (%s) in %.3f s, %.0f requests/s", c.requests,
                 fixed ? "pinned, batched, top-1 on the GPU" : "pageable, one at a time, top-1 on the CPU", seconds,
                 c.requests / seconds);
  return 0;
}
