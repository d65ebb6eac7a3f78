// implicit_syncs: loops whose calls synchronize without saying so, one per
// --case, each with a --fixed variant that removes the implicit
// synchronization (tests/verdicts/test_implicit_syncs.cpp):
//   pageable_async  cudaMemcpyAsync up and down from malloc'ed (pageable)
//                   buffers, one stream synchronize at the end;
//                   fixed: the same copies from cudaMallocHost buffers
//   free_loop       cudaMalloc, a kernel, cudaFree per iteration;
//                   fixed: one buffer allocated before the loop
//   pinned_memset   a kernel on a stream, then cudaMemset of a pinned host
//                   buffer per iteration; fixed: cudaMemsetAsync on the stream
//   legacy_mix      kernels on two streams from cudaStreamCreate (blocking)
//                   interleaved with kernels on stream 0;
//                   fixed: the streams are created with cudaStreamNonBlocking
//   event_poll      a kernel and an event per iteration, then
//                   while (cudaEventQuery(e) == cudaErrorNotReady) {};
//                   fixed: cudaEventSynchronize on a cudaEventBlockingSync event
// Exit status 1 on a CUDA error, 2 on a usage error; one line on success.
#include <cstdlib>
#include <cstring>
#include <string>

#include "common.hpp"

namespace {

constexpr int kThreads = 256;

__global__ void touch(float* data, int n, float value) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = value;
}

// A grid wide enough that the kernel takes a while (simgpu times kernels by
// the threads launched); only the first n threads write.
void launch(float* data, int n, cudaStream_t s, int blocks = 4096) {
  touch<<<blocks, kThreads, 0, s>>>(data, n, 1.0f);
  CHECK_LAUNCH(touch);
}

void pageable_async(int iters, bool fixed) {
  const size_t bytes = 1 << 20;
  const int n = static_cast<int>(bytes / sizeof(float));
  float *up = nullptr, *down = nullptr, *device = nullptr;
  if (fixed) {
    CHECK(cudaMallocHost(&up, bytes));
    CHECK(cudaMallocHost(&down, bytes));
  } else {
    up = static_cast<float*>(std::malloc(bytes));
    down = static_cast<float*>(std::malloc(bytes));
  }
  std::memset(up, 0, bytes);
  CHECK(cudaMalloc(&device, bytes));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (int i = 0; i < iters; ++i) {
    CHECK(cudaMemcpyAsync(device, up, bytes, cudaMemcpyHostToDevice, s));
    launch(device, n, s, n / kThreads);
    CHECK(cudaMemcpyAsync(down, device, bytes, cudaMemcpyDeviceToHost, s));
  }
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaStreamDestroy(s));
  CHECK(cudaFree(device));
  if (fixed) {
    CHECK(cudaFreeHost(up));
    CHECK(cudaFreeHost(down));
  } else {
    std::free(up);
    std::free(down);
  }
}

void free_loop(int iters, bool fixed) {
  const size_t bytes = 8 << 20;
  const int n = static_cast<int>(bytes / sizeof(float));
  float* kept = nullptr;
  if (fixed) CHECK(cudaMalloc(&kept, bytes));
  for (int i = 0; i < iters; ++i) {
    float* buffer = kept;
    if (!fixed) CHECK(cudaMalloc(&buffer, bytes));
    launch(buffer, n, 0, n / kThreads);
    if (!fixed) CHECK(cudaFree(buffer));
  }
  CHECK(cudaDeviceSynchronize());
  if (fixed) CHECK(cudaFree(kept));
}

void pinned_memset(int iters, bool fixed) {
  const size_t bytes = 4 << 20;
  const int n = 1 << 16;
  float *pinned = nullptr, *device = nullptr;
  CHECK(cudaMallocHost(&pinned, bytes));
  CHECK(cudaMalloc(&device, n * sizeof(float)));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (int i = 0; i < iters; ++i) {
    launch(device, n, s);
    if (fixed) CHECK(cudaMemsetAsync(pinned, 0, bytes, s));
    else CHECK(cudaMemset(pinned, 0, bytes));
  }
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaStreamDestroy(s));
  CHECK(cudaFree(device));
  CHECK(cudaFreeHost(pinned));
}

void legacy_mix(int iters, bool fixed) {
  const int n = 1 << 16;
  float* device = nullptr;
  CHECK(cudaMalloc(&device, 3 * n * sizeof(float)));
  cudaStream_t a, b;
  if (fixed) {
    CHECK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  } else {
    CHECK(cudaStreamCreate(&a));
    CHECK(cudaStreamCreate(&b));
  }
  for (int i = 0; i < iters; ++i) {
    launch(device, n, a);
    launch(device + n, n, 0);  // the legacy default stream
    launch(device + 2 * n, n, b);
  }
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaStreamDestroy(a));
  CHECK(cudaStreamDestroy(b));
  CHECK(cudaFree(device));
}

void event_poll(int iters, bool fixed) {
  const int n = 1 << 16;
  float* device = nullptr;
  CHECK(cudaMalloc(&device, n * sizeof(float)));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t done;
  CHECK(cudaEventCreateWithFlags(&done, fixed ? cudaEventBlockingSync : cudaEventDefault));
  for (int i = 0; i < iters; ++i) {
    launch(device, n, s, 1 << 16);
    CHECK(cudaEventRecord(done, s));
    if (fixed) {
      CHECK(cudaEventSynchronize(done));
      continue;
    }
    cudaError_t state;
    while ((state = cudaEventQuery(done)) == cudaErrorNotReady) {
    }
    CHECK(state);
  }
  CHECK(cudaEventDestroy(done));
  CHECK(cudaStreamDestroy(s));
  CHECK(cudaFree(device));
}

}  // namespace

int main(int argc, char** argv) {
  sample::name() = "implicit_syncs";
  const char* usage =
      "--case pageable_async|free_loop|pinned_memset|legacy_mix|event_poll [--iters=N] [--fixed]";
  // The case is a word, not a number: take it out before the numeric flags.
  std::string which;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--case") == 0 && i + 1 < argc) which = argv[++i];
    else argv[kept++] = argv[i];
  }
  const sample::Flags flags(kept, argv, {"iters=", "fixed"}, usage);
  const int iters = static_cast<int>(flags.get("iters", 300));
  const bool fixed = flags.has("fixed");
  if (which == "pageable_async") pageable_async(iters, fixed);
  else if (which == "free_loop") free_loop(iters, fixed);
  else if (which == "pinned_memset") pinned_memset(iters, fixed);
  else if (which == "legacy_mix") legacy_mix(iters, fixed);
  else if (which == "event_poll") event_poll(iters, fixed);
  else {
    std::fprintf(stderr, "usage: implicit_syncs %s\n", usage);
    return 2;
  }
  std::printf("implicit_syncs: %s%s, %d iterations\n", which.c_str(), fixed ? " (fixed)" : "", iters);
  return 0;
}
