// A CUDA program (run on simgpu) whose threads do what real programs do to
// gpuscope's exit paths and buffers; one command per run:
//   pairs:T:K        T threads, each K rounds of cudaMemcpy (4 KiB, host to
//                    device), cudaMemset and cudaStreamSynchronize; prints
//                    how many calls of each it made
//   race:T:HOW:C     T threads each copy 20 times, then all at once print
//                    "thread I: CUDA error at NS" (CLOCK_MONOTONIC) on stderr
//                    and end the process with status C: HOW = exit (every
//                    thread exit()s, as checkCudaErrors does), mixed (thread
//                    I calls exit(), _exit() or quick_exit() by I % 3)
//   chatter:T:C      T threads each copy 20 times; then thread 0 calls
//                    exit(C) while the others print "thread I: running at
//                    NS" (CLOCK_MONOTONIC) on stderr every 50 us until the
//                    process is gone
//   main_leaves:T:MS the main thread copies once, starts T threads that copy
//                    for MS ms and print "worker I done", and calls
//                    pthread_exit: the process ends with its last thread
//   polls:T:R        T threads, each R rounds of: a 16 MiB copy from pinned
//                    memory, then a bare loop polling until it is done, with
//                    cudaEventQuery, cudaStreamQuery, cuEventQuery and
//                    cuStreamQuery in turn (the driver's functions from
//                    cudaGetDriverEntryPointByVersion); prints each one's
//                    "not ready" answers
//   poll_at_exit:MS:HOW a thread polls copies' events in a bare loop without
//                    end; after MS ms the main thread prints the "not ready"
//                    answers so far and ends the process while the thread
//                    polls: HOW = exit (exit(0)), _exit (_exit(0)) or exec
//                    (execs /bin/true)
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr size_t kBytes = 4096;

struct Device {
  void* buffer = nullptr;
  Device() {
    if (cudaMalloc(&buffer, kBytes) != cudaSuccess) {
      std::fprintf(stderr, "cudaMalloc failed\n");
      std::exit(3);
    }
  }
};

void copy_once(const Device& d) {
  static const char host[kBytes] = {};
  cudaMemcpy(d.buffer, host, kBytes, cudaMemcpyHostToDevice);
}

// T threads that each copy `copies` times, then run body(I) all at once.
template <class Body> void together(const Device& d, int threads, int copies, Body body) {
  pthread_barrier_t start;
  pthread_barrier_init(&start, nullptr, static_cast<unsigned>(threads));
  std::vector<std::thread> workers;
  for (int i = 0; i < threads; ++i)
    workers.emplace_back([&, i] {
      for (int n = 0; n < copies; ++n) copy_once(d);
      pthread_barrier_wait(&start);
      body(i);
    });
  for (auto& w : workers) w.join();
}

int pairs(int threads, long rounds) {
  Device d;
  together(d, threads, 0, [&](int) {  // all at once: the writer falls behind
    for (long n = 0; n < rounds; ++n) {
      copy_once(d);
      cudaMemset(d.buffer, 0, kBytes);
      cudaStreamSynchronize(nullptr);
    }
  });
  const long calls = threads * rounds;
  std::printf("cudaMemcpy %ld cudaMemset %ld cudaStreamSynchronize %ld\n", calls, calls, calls);
  return 0;
}

[[noreturn]] void end_process(const std::string& how, int index, int code) {
  if (how == "mixed" && index % 3 == 1) _exit(code);
  if (how == "mixed" && index % 3 == 2) std::quick_exit(code);
  std::exit(code);
}

long long monotonic_now() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return now.tv_sec * 1'000'000'000ll + now.tv_nsec;
}

int chatter(int threads, int code) {
  Device d;
  together(d, threads, 20, [&](int i) {
    if (i == 0) std::exit(code);
    for (;;) {
      std::fprintf(stderr, "thread %d: running at %lld\n", i, monotonic_now());
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  });
  return 0;  // never reached: thread 0 ends the process
}

int race(int threads, const std::string& how, int code) {
  Device d;
  together(d, threads, 20, [&](int i) {
    std::fprintf(stderr, "thread %d: CUDA error at %lld\n", i, monotonic_now());
    end_process(how, i, code);
  });
  return 0;  // never reached: a thread ends the process
}

int main_leaves(int threads, int ms) {
  static Device d;
  copy_once(d);
  for (int i = 0; i < threads; ++i)
    std::thread([i, ms] {
      const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
      while (std::chrono::steady_clock::now() < until) copy_once(d);
      std::printf("worker %d done\n", i);
      std::fflush(stdout);
    }).detach();
  pthread_exit(nullptr);
}

// One thread's GPU work to wait for: 16 MiB up from pinned memory on its
// own stream, and an event after it.
struct Transfer {
  static constexpr size_t kBytes = 16u << 20;
  void* host = nullptr;
  void* device = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t done = nullptr;
  Transfer() {
    if (cudaMallocHost(&host, kBytes) != cudaSuccess || cudaMalloc(&device, kBytes) != cudaSuccess ||
        cudaStreamCreate(&stream) != cudaSuccess || cudaEventCreate(&done) != cudaSuccess) {
      std::fprintf(stderr, "cannot set up a transfer\n");
      std::exit(3);
    }
  }
  void start() {
    cudaMemcpyAsync(device, host, kBytes, cudaMemcpyHostToDevice, stream);
    cudaEventRecord(done, stream);
  }
};

template <class Fn> Fn driver_function(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion(name, &fn, 13000, cudaEnableDefault, &found) != cudaSuccess || fn == nullptr) {
    std::fprintf(stderr, "no driver function %s\n", name);
    std::exit(3);
  }
  return reinterpret_cast<Fn>(fn);
}

// A bare wait loop, as NVIDIA's asyncAPI sample writes it: the "not ready"
// answers until `query` says anything else (success, here).
template <class Query> uint64_t wait_polling(Query&& query) {
  uint64_t not_ready = 0;
  while (query() == 600) ++not_ready;  // cudaErrorNotReady, CUDA_ERROR_NOT_READY
  return not_ready;
}

int polls(int threads, int rounds) {
  const auto event_query = driver_function<CUresult (*)(CUevent)>("cuEventQuery");
  const auto stream_query = driver_function<CUresult (*)(CUstream)>("cuStreamQuery");
  std::atomic<uint64_t> counts[4] = {};
  std::vector<std::thread> workers;
  for (int i = 0; i < threads; ++i)
    workers.emplace_back([&] {
      Transfer t;
      for (int r = 0; r < rounds; ++r) {
        const std::function<int()> queries[4] = {
            [&] { return static_cast<int>(cudaEventQuery(t.done)); },
            [&] { return static_cast<int>(cudaStreamQuery(t.stream)); },
            [&] { return static_cast<int>(event_query(reinterpret_cast<CUevent>(t.done))); },
            [&] { return static_cast<int>(stream_query(reinterpret_cast<CUstream>(t.stream))); }};
        for (int q = 0; q < 4; ++q) {
          t.start();
          counts[q] += wait_polling(queries[q]);
        }
      }
    });
  for (auto& w : workers) w.join();
  std::printf("not ready: cudaEventQuery %lu cudaStreamQuery %lu cuEventQuery %lu cuStreamQuery %lu\n",
              static_cast<unsigned long>(counts[0].load()), static_cast<unsigned long>(counts[1].load()),
              static_cast<unsigned long>(counts[2].load()), static_cast<unsigned long>(counts[3].load()));
  return 0;
}

int poll_at_exit(int ms, const std::string& how) {
  static std::atomic<uint64_t> not_ready{0};
  std::thread([] {
    Transfer t;
    for (;;) {
      t.start();
      while (cudaEventQuery(t.done) == cudaErrorNotReady) not_ready.fetch_add(1, std::memory_order_relaxed);
    }
  }).detach();
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  std::printf("not ready so far: %lu\n", static_cast<unsigned long>(not_ready.load()));
  std::fflush(stdout);
  if (how == "_exit") _exit(0);
  if (how == "exec") execl("/bin/true", "true", static_cast<char*>(nullptr));
  std::exit(0);
}

std::vector<std::string> fields(const std::string& arg) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t colon; (colon = arg.find(':', start)) != std::string::npos; start = colon + 1)
    out.push_back(arg.substr(start, colon - start));
  out.push_back(arg.substr(start));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> f = fields(argc > 1 ? argv[1] : "");
  if (f[0] == "pairs" && f.size() == 3) return pairs(std::stoi(f[1]), std::stol(f[2]));
  if (f[0] == "race" && f.size() == 4) return race(std::stoi(f[1]), f[2], std::stoi(f[3]));
  if (f[0] == "chatter" && f.size() == 3) return chatter(std::stoi(f[1]), std::stoi(f[2]));
  if (f[0] == "main_leaves" && f.size() == 3) return main_leaves(std::stoi(f[1]), std::stoi(f[2]));
  if (f[0] == "polls" && f.size() == 3) return polls(std::stoi(f[1]), std::stoi(f[2]));
  if (f[0] == "poll_at_exit" && f.size() == 3) return poll_at_exit(std::stoi(f[1]), f[2]);
  std::fprintf(stderr,
               "usage: cuda_threads pairs:T:K | race:T:exit|mixed:C | chatter:T:C | main_leaves:T:MS | polls:T:R | "
               "poll_at_exit:MS:exit|_exit|exec\n");
  return 2;
}
