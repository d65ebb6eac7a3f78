// request_service: a request loop wrapped in NVTX, for tail latency per
// request (gpuscope analyze --requests request; tests/verdicts/
// test_tail_latency.cpp). Each of --requests N requests is one NVTX range
// "request": a small input copied up from pinned memory, four kernels, the
// small result copied back, a synchronization on the request's stream.
// Every --large-every K-th request (none with --healthy) also
// brings a large input (--large-mib M) that it copies from pageable memory,
// as a service does with the occasional big upload it did not stage: those
// requests are the tail, slow from pageable copies where the median waits
// for its kernel. With --storm-every K instead, every K-th request wakes a
// helper thread that churns device memory while the request runs
// (cudaMalloc, a fill kernel on the legacy stream, cudaFree, --storm-rounds
// times): the request's own calls are the median's, it only waits longer,
// and what grew is on another thread. With --refresh-every K, every K-th
// request wakes a helper thread that holds the model lock every request
// takes while it computes on the CPU for --refresh-ms (8): the request
// waits off the CPU, outside CUDA, while the helper's CPU samples show
// where the time went. With --profiler-api each request is
// a cudaProfilerStart/cudaProfilerStop window instead of an NVTX range
// (--requests cudaProfilerApi). The output depends on the data only.
#include <cuda_profiler_api.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "common.hpp"

namespace {

constexpr int kThreads = 256, kSmallElems = 16 * 1024;  // 64 KiB of floats
// A grid large enough that each kernel takes about a millisecond on an
// H200-class GPU (and on simgpu's model of one): requests of a few
// milliseconds, long next to a loaded host's scheduling delays.
constexpr int kBlocks = 1 << 21, kKernelsPerRequest = 4;

__global__ void score(float* data, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = data[i] * 0.5f + 1.0f;
}

__global__ void fill(char* data, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) data[i] = 1;
}

// A helper thread that runs `task` once per wake-up: start() wakes it and
// returns once the task says it is under way (the request arrives while it
// runs), wait() until it is done.
class Helper {
 public:
  using Task = std::function<void(const std::function<void()>& under_way)>;
  explicit Helper(Task task) : task_(std::move(task)), thread_([this] { run(); }) {}
  ~Helper() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }
  void start() {
    std::unique_lock lock(mu_);
    done_.wait(lock, [&] { return pending_ == 0; });
    pending_ = 1;
    under_way_ = false;
    wake_.notify_one();
    done_.wait(lock, [&] { return under_way_; });
  }
  void wait() {
    std::unique_lock lock(mu_);
    done_.wait(lock, [&] { return pending_ == 0; });
  }

 private:
  void run() {
    std::unique_lock lock(mu_);
    for (;;) {
      wake_.wait(lock, [&] { return stop_ || pending_ != 0; });
      if (stop_) return;
      lock.unlock();
      task_([this] {
        std::lock_guard under(mu_);
        under_way_ = true;
        done_.notify_all();
      });
      lock.lock();
      pending_ = 0;
      done_.notify_all();
    }
  }
  const Task task_;
  std::mutex mu_;
  std::condition_variable wake_, done_;
  int pending_ = 0;
  bool under_way_ = false, stop_ = false;
  std::thread thread_;
};

// The allocator storm, one per wake-up: scratch buffers allocated, filled
// and freed, as a background task that does not pool its memory would.
void churn(long rounds, const std::function<void()>& under_way) {
  constexpr size_t kScratch = 32u << 20;
  for (long i = 0; i < std::max(1L, rounds); ++i) {
    char* scratch = nullptr;
    CHECK(cudaMalloc(&scratch, kScratch));
    fill<<<kKernelsPerRequest * kBlocks, kThreads>>>(scratch, kScratch);  // as long as a request's kernels
    CHECK_LAUNCH(fill);
    if (i == 0) under_way();
    CHECK(cudaFree(scratch));  // waits for the whole device: the request's kernels too
  }
}

// Every request reads the model under this lock; a refresh rebuilds it.
std::mutex model_lock;
volatile double model_state = 0;

// A model refresh on the CPU, holding the model lock for --refresh-ms: the
// requests that arrive meanwhile wait off the CPU for it, as a server's
// requests wait for a background task that holds the GIL or a model lock.
void refresh(long ms, const std::function<void()>& under_way) {
  std::lock_guard lock(model_lock);
  under_way();
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  double x = model_state;
  while (std::chrono::steady_clock::now() < until)
    for (int i = 0; i < 10000; ++i) x = x * 0.999999 + 1e-9 * i;
  model_state = x;
}

struct Buffers {
  float *host_in = nullptr, *host_out = nullptr, *device = nullptr;
  char* device_large = nullptr;
  std::vector<char> large_input;  // pageable, like a request body the service just parsed
};

// One request; the large input's copy is the call site the tail comes from.
void serve(Buffers& b, cudaStream_t stream, bool large, Helper* helper, bool profiler_api) {
  if (profiler_api) CHECK(cudaProfilerStart());
  else nvtxRangePushA("request");
  if (helper != nullptr) helper->start();
  { std::lock_guard lock(model_lock); }  // the model is ready
  CHECK(cudaMemcpyAsync(b.device, b.host_in, kSmallElems * sizeof(float), cudaMemcpyHostToDevice, stream));
  if (large) CHECK(cudaMemcpy(b.device_large, b.large_input.data(), b.large_input.size(), cudaMemcpyHostToDevice));
  for (int k = 0; k < kKernelsPerRequest; ++k) {
    score<<<kBlocks, kThreads, 0, stream>>>(b.device, kSmallElems);
    CHECK_LAUNCH(score);
  }
  CHECK(cudaMemcpyAsync(b.host_out, b.device, kSmallElems * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CHECK(cudaStreamSynchronize(stream));
  if (profiler_api) CHECK(cudaProfilerStop());
  else nvtxRangePop();
  if (helper != nullptr) helper->wait();  // the next request starts after the helper's work
}

}  // namespace

int main(int argc, char** argv) {
  sample::name() = "request_service";
  const sample::Flags flags(argc, argv,
                            {"requests=", "large-every=", "large-mib=", "healthy", "storm-every=", "storm-rounds=",
                             "refresh-every=", "refresh-ms=", "profiler-api"},
                            "[--requests N] [--large-every K | --storm-every K [--storm-rounds R] | --refresh-every K "
                            "[--refresh-ms T] | --healthy] [--large-mib M] [--profiler-api]");
  const long requests = flags.get("requests", 120);
  const long storm_every = flags.get("storm-every", 0), refresh_every = flags.get("refresh-every", 0);
  const long helper_every = storm_every > 0 ? storm_every : refresh_every;
  const long large_every = flags.has("healthy") || helper_every > 0 ? 0 : flags.get("large-every", 10);
  Buffers b;
  b.large_input.assign(static_cast<size_t>(flags.get("large-mib", 64)) << 20, 1);
  CHECK(cudaMallocHost(&b.host_in, kSmallElems * sizeof(float)));
  CHECK(cudaMallocHost(&b.host_out, kSmallElems * sizeof(float)));
  CHECK(cudaMalloc(&b.device, kSmallElems * sizeof(float)));
  CHECK(cudaMalloc(&b.device_large, b.large_input.size()));
  for (int i = 0; i < kSmallElems; ++i) b.host_in[i] = static_cast<float>(i % 13);
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  double checksum = 0;
  {
    std::unique_ptr<Helper> helper;
    const long rounds = flags.get("storm-rounds", 3), refresh_ms = flags.get("refresh-ms", 8);
    if (storm_every > 0) helper = std::make_unique<Helper>([=](const auto& under_way) { churn(rounds, under_way); });
    else if (refresh_every > 0)
      helper = std::make_unique<Helper>([=](const auto& under_way) { refresh(refresh_ms, under_way); });
    for (long r = 0; r < requests; ++r) {
      const bool helped = helper_every > 0 && r % helper_every == helper_every - 1;
      serve(b, stream, large_every > 0 && r % large_every == large_every - 1, helped ? helper.get() : nullptr,
            flags.has("profiler-api"));
      checksum += b.host_out[r % kSmallElems];
    }
  }
  CHECK(cudaStreamDestroy(stream));
  CHECK(cudaFree(b.device_large));
  CHECK(cudaFree(b.device));
  CHECK(cudaFreeHost(b.host_out));
  CHECK(cudaFreeHost(b.host_in));
  std::printf("request_service: %ld requests, checksum %.1f\n", requests, checksum);
  return 0;
}
