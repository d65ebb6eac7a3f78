// The device model seen through the CUDA runtime API, on tests/nodes/test.json:
// copy engines at 0.1 GB/s pinned and 0.02 GB/s pageable, kernels
// k_1ms/k_10ms/k_50ms of fixed length.  A "not ready yet" check always
// has tens of milliseconds of modeled work ahead of it.  Every assertion is one the model guarantees (work never
// completes before its modeled time; ordering is by the model's rules), so
// none depends on how busy the machine running the tests is.
#include <cstring>
#include <thread>
#include <vector>

#include "test_support.hpp"

extern "C" cudaError_t cudaStreamQuery_ptsz(cudaStream_t s);
extern "C" cudaError_t cudaLaunchKernel_ptsz(const void* f, dim3 g, dim3 b, void** a, size_t m, cudaStream_t s);

namespace {

using simgpu_test::elapsed_ms;
using simgpu_test::kernel;
using simgpu_test::launch;
using simgpu_test::wall_ms;

constexpr size_t kTwoMiB = 2u << 20;  // 21 ms pinned, 105 ms pageable on the test node

TEST(Runtime, ReportsTheSimulatedDevice) {
  int count = 0;
  CUDA_OK(cudaGetDeviceCount(&count));
  EXPECT_EQ(1, count);
  cudaDeviceProp prop;
  CUDA_OK(cudaGetDeviceProperties(&prop, 0));
  EXPECT_NE(nullptr, std::strstr(prop.name, "(simulated)"));
  EXPECT_EQ(9, prop.major);
  EXPECT_EQ(132, prop.multiProcessorCount);
  int version = 0;
  CUDA_OK(cudaDriverGetVersion(&version));
  EXPECT_EQ(13000, version);
}

TEST(Runtime, CopiesMoveRealBytes) {
  std::vector<int> in(1000), out(1000, 0);
  for (int i = 0; i < 1000; ++i) in[i] = i * 7;
  int* dev = nullptr;
  CUDA_OK(cudaMalloc(&dev, 4000));
  CUDA_OK(cudaMemcpy(dev, in.data(), 4000, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemset(dev, 0, 40));
  CUDA_OK(cudaMemcpy(out.data(), dev, 4000, cudaMemcpyDeviceToHost));
  EXPECT_EQ(0, out[9]);
  EXPECT_EQ(10 * 7, out[10]);
  EXPECT_EQ(999 * 7, out[999]);
  CUDA_OK(cudaFree(dev));
}

TEST(Model, StreamOrdersItsWork) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  cudaEvent_t start, end;
  CUDA_OK(cudaEventCreate(&start));
  CUDA_OK(cudaEventCreate(&end));
  CUDA_OK(cudaEventRecord(start, s));
  for (int i = 0; i < 3; ++i) CUDA_OK(launch(kernel("k_1ms"), s));
  CUDA_OK(launch(kernel("k_50ms"), s));
  CUDA_OK(cudaEventRecord(end, s));
  EXPECT_EQ(cudaErrorNotReady, cudaStreamQuery(s));  // launches return before the work is done
  EXPECT_EQ(cudaErrorNotReady, cudaEventQuery(end));
  CUDA_OK(cudaStreamSynchronize(s));
  EXPECT_EQ(cudaSuccess, cudaStreamQuery(s));
  EXPECT_GE(elapsed_ms(start, end), 53.0f);  // the kernels ran one after another
  CUDA_OK(cudaStreamDestroy(s));
}

TEST(Model, SynchronizeBlocksUntilModeledCompletion) {
  CUDA_OK(launch(kernel("k_10ms")));
  const double waited = wall_ms([] { EXPECT_EQ(cudaSuccess, cudaDeviceSynchronize()); });
  EXPECT_GE(waited, 9.0);
}

TEST(Model, EventTiming) {
  cudaEvent_t a, b, untimed;
  CUDA_OK(cudaEventCreate(&a));
  CUDA_OK(cudaEventCreate(&b));
  CUDA_OK(cudaEventCreateWithFlags(&untimed, cudaEventDisableTiming));
  EXPECT_EQ(cudaSuccess, cudaEventQuery(a));  // never recorded: complete
  CUDA_OK(cudaEventRecord(a));
  CUDA_OK(launch(kernel("k_50ms")));
  CUDA_OK(launch(kernel("k_1ms")));
  CUDA_OK(cudaEventRecord(b));
  CUDA_OK(cudaEventRecord(untimed));
  EXPECT_EQ(cudaErrorNotReady, cudaEventQuery(b));
  float ms = 0;
  EXPECT_EQ(cudaErrorNotReady, cudaEventElapsedTime(&ms, a, b));
  CUDA_OK(cudaEventSynchronize(b));
  EXPECT_GE(elapsed_ms(a, b), 51.0f);
  EXPECT_LT(elapsed_ms(a, b), 51.0f + 500.0f);
  EXPECT_EQ(cudaErrorInvalidResourceHandle, cudaEventElapsedTime(&ms, a, untimed));
  EXPECT_EQ(cudaErrorInvalidResourceHandle, cudaGetLastError());
  EXPECT_EQ(cudaSuccess, cudaGetLastError());  // reading it cleared it
}

TEST(Model, PinnedCopiesAreAsyncAndFasterThanPageable) {
  void *dev = nullptr, *pinned = nullptr;
  std::vector<char> pageable(kTwoMiB, 1);
  CUDA_OK(cudaMalloc(&dev, kTwoMiB));
  CUDA_OK(cudaMemset(dev, 0, kTwoMiB));  // fault its pages in before timing copies
  CUDA_OK(cudaMallocHost(&pinned, kTwoMiB));
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  cudaEvent_t e[4];
  for (cudaEvent_t& ev : e) CUDA_OK(cudaEventCreate(&ev));
  CUDA_OK(cudaEventRecord(e[0], s));
  CUDA_OK(cudaMemcpyAsync(dev, pinned, kTwoMiB, cudaMemcpyHostToDevice, s));
  CUDA_OK(cudaEventRecord(e[1], s));
  EXPECT_EQ(cudaErrorNotReady, cudaStreamQuery(s));  // pinned: truly asynchronous
  CUDA_OK(cudaStreamSynchronize(s));
  CUDA_OK(cudaEventRecord(e[2], s));
  CUDA_OK(cudaMemcpyAsync(dev, pageable.data(), kTwoMiB, cudaMemcpyHostToDevice, s));
  EXPECT_EQ(cudaSuccess, cudaStreamQuery(s));  // pageable: "async" returned after the copy
  CUDA_OK(cudaEventRecord(e[3], s));
  CUDA_OK(cudaStreamSynchronize(s));
  const float pinned_ms = elapsed_ms(e[0], e[1]), pageable_ms = elapsed_ms(e[2], e[3]);
  EXPECT_GE(pinned_ms, 20.0f);
  EXPECT_GE(pageable_ms, 100.0f);
  EXPECT_GT(pageable_ms, pinned_ms);
  CUDA_OK(cudaFreeHost(pinned));
  CUDA_OK(cudaFree(dev));
}

TEST(Model, CopyAndComputeEnginesOverlap) {
  void *dev = nullptr, *pinned = nullptr;
  CUDA_OK(cudaMalloc(&dev, kTwoMiB));
  CUDA_OK(cudaMallocHost(&pinned, kTwoMiB));
  cudaStream_t a, b;
  CUDA_OK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  cudaEvent_t start, copied, computed;
  for (cudaEvent_t* ev : {&start, &copied, &computed}) CUDA_OK(cudaEventCreate(ev));
  CUDA_OK(cudaEventRecord(start, a));
  CUDA_OK(launch(kernel("k_50ms"), a));
  CUDA_OK(cudaEventRecord(computed, a));
  CUDA_OK(cudaMemcpyAsync(dev, pinned, kTwoMiB, cudaMemcpyHostToDevice, b));
  CUDA_OK(cudaEventRecord(copied, b));
  CUDA_OK(cudaDeviceSynchronize());
  // The 21 ms copy ran on its own engine during the 50 ms kernel, so it
  // ended first; queued behind it, it would have ended 21 ms after.
  EXPECT_LT(elapsed_ms(start, copied), elapsed_ms(start, computed));
  CUDA_OK(cudaFreeHost(pinned));
  CUDA_OK(cudaFree(dev));
}

TEST(Model, PinnedAsyncCopiesMoveBytesWhenTheStreamReachesThem) {
  constexpr size_t kBytes = 4096;
  char *dev = nullptr, *pinned = nullptr, *staged = nullptr;
  CUDA_OK(cudaMalloc(&dev, kBytes));
  CUDA_OK(cudaMallocHost(&pinned, kBytes));
  CUDA_OK(cudaMallocHost(&staged, kBytes));
  std::memset(pinned, 'a', kBytes);
  std::memset(staged, 'h', kBytes);
  CUDA_OK(cudaMemcpy(dev, pinned, kBytes, cudaMemcpyHostToDevice));
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  // Behind a 50 ms kernel: upload new bytes, then read them back.
  CUDA_OK(launch(kernel("k_50ms"), s));
  CUDA_OK(cudaMemcpyAsync(dev, staged, kBytes, cudaMemcpyHostToDevice, s));
  CUDA_OK(cudaMemcpyAsync(pinned, dev, kBytes, cudaMemcpyDeviceToHost, s));
  // The calls returned; the stream has not reached the copies yet.
  EXPECT_EQ('a', pinned[0]);
  EXPECT_EQ('a', dev[kBytes - 1]);
  EXPECT_EQ(cudaErrorNotReady, cudaStreamQuery(s));
  CUDA_OK(cudaStreamSynchronize(s));
  EXPECT_EQ('h', pinned[0]);
  EXPECT_EQ('h', pinned[kBytes - 1]);
  EXPECT_EQ(cudaSuccess, cudaStreamQuery(s));
  // A memset is asynchronous too, and a later synchronous copy sees it.
  CUDA_OK(launch(kernel("k_10ms"), s));
  CUDA_OK(cudaMemsetAsync(dev, 'm', kBytes, s));
  EXPECT_EQ('h', dev[0]);
  std::vector<char> back(kBytes);
  CUDA_OK(cudaStreamSynchronize(s));
  CUDA_OK(cudaMemcpy(back.data(), dev, kBytes, cudaMemcpyDeviceToHost));
  EXPECT_EQ('m', back[kBytes / 2]);
  CUDA_OK(cudaStreamDestroy(s));
  CUDA_OK(cudaFreeHost(staged));
  CUDA_OK(cudaFreeHost(pinned));
  CUDA_OK(cudaFree(dev));
}

TEST(Model, LegacyStreamOrdersAsyncAndSynchronousCopies) {
  // An asynchronous upload queued behind a kernel, then a synchronous
  // download on the same (legacy) stream: the download sees the upload.
  constexpr size_t kBytes = 1 << 16;
  char *dev = nullptr, *pinned = nullptr;
  CUDA_OK(cudaMalloc(&dev, kBytes));
  CUDA_OK(cudaMallocHost(&pinned, kBytes));
  std::memset(pinned, 7, kBytes);
  CUDA_OK(launch(kernel("k_10ms")));
  CUDA_OK(cudaMemcpyAsync(dev, pinned, kBytes, cudaMemcpyHostToDevice, nullptr));
  std::vector<char> back(kBytes, 0);
  CUDA_OK(cudaMemcpy(back.data(), dev, kBytes, cudaMemcpyDeviceToHost));
  EXPECT_EQ(7, back[0]);
  EXPECT_EQ(7, back[kBytes - 1]);
  CUDA_OK(cudaFreeHost(pinned));
  CUDA_OK(cudaFree(dev));
}

TEST(Model, UploadComputeAndDownloadOverlapOnTheirOwnEngines) {
  // Three streams released together by an event: an upload, a kernel and a
  // download start at the same modeled instant; the two copies run on the
  // host-to-device and device-to-host engines at once, so they end together
  // (queued on one engine, one would end 21 ms after the other).
  void *dev_in = nullptr, *dev_out = nullptr, *pinned_in = nullptr, *pinned_out = nullptr;
  CUDA_OK(cudaMalloc(&dev_in, kTwoMiB));
  CUDA_OK(cudaMalloc(&dev_out, kTwoMiB));
  CUDA_OK(cudaMallocHost(&pinned_in, kTwoMiB));
  CUDA_OK(cudaMallocHost(&pinned_out, kTwoMiB));
  cudaStream_t gate, up, compute, down;
  for (cudaStream_t* s : {&gate, &up, &compute, &down}) CUDA_OK(cudaStreamCreateWithFlags(s, cudaStreamNonBlocking));
  cudaEvent_t open, uploaded, computed, downloaded;
  for (cudaEvent_t* e : {&open, &uploaded, &computed, &downloaded}) CUDA_OK(cudaEventCreate(e));
  CUDA_OK(launch(kernel("k_50ms"), gate));  // room for the host to queue everything
  CUDA_OK(cudaEventRecord(open, gate));
  for (cudaStream_t s : {up, compute, down}) CUDA_OK(cudaStreamWaitEvent(s, open, 0));
  CUDA_OK(cudaMemcpyAsync(dev_in, pinned_in, kTwoMiB, cudaMemcpyHostToDevice, up));
  CUDA_OK(cudaEventRecord(uploaded, up));
  CUDA_OK(launch(kernel("k_50ms"), compute));
  CUDA_OK(cudaEventRecord(computed, compute));
  CUDA_OK(cudaMemcpyAsync(pinned_out, dev_out, kTwoMiB, cudaMemcpyDeviceToHost, down));
  CUDA_OK(cudaEventRecord(downloaded, down));
  CUDA_OK(cudaDeviceSynchronize());
  EXPECT_GE(elapsed_ms(open, uploaded), 20.0f);
  EXPECT_FLOAT_EQ(elapsed_ms(open, uploaded), elapsed_ms(open, downloaded));
  EXPECT_LT(elapsed_ms(open, downloaded), elapsed_ms(open, computed));
  for (void* p : {pinned_in, pinned_out}) CUDA_OK(cudaFreeHost(p));
  for (void* p : {dev_in, dev_out}) CUDA_OK(cudaFree(p));
}

TEST(Model, FreeSynchronizesTheDeviceButFreeAsyncDoesNot) {
  void *a = nullptr, *b = nullptr;
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CUDA_OK(cudaMalloc(&a, 1024));
  CUDA_OK(cudaMallocAsync(&b, 1024, s));
  CUDA_OK(launch(kernel("k_50ms"), s));
  CUDA_OK(cudaFreeAsync(b, s));
  EXPECT_EQ(cudaErrorNotReady, cudaStreamQuery(s));  // stream-ordered free did not wait
  CUDA_OK(cudaFree(a));                              // unrelated memory, yet it waits for s
  EXPECT_EQ(cudaSuccess, cudaStreamQuery(s));
  EXPECT_EQ(cudaErrorInvalidValue, cudaFree(a));  // double free
  cudaGetLastError();
}

// The memset API's documented synchronization: asynchronous to the host on
// device memory, fully synchronous on pinned (and managed) memory; the
// Async form never waits.
TEST(Model, SynchronousMemsetOfPinnedMemoryWaitsForTheStreamAndSetsTheBytes) {
  void *pinned = nullptr, *device = nullptr;
  CUDA_OK(cudaMallocHost(&pinned, 4096));
  CUDA_OK(cudaMalloc(&device, 4096));
  std::memset(pinned, 0, 4096);
  CUDA_OK(launch(kernel("k_50ms")));
  CUDA_OK(cudaMemset(device, 1, 4096));
  EXPECT_EQ(cudaErrorNotReady, cudaStreamQuery(nullptr));  // device memory: returned at once
  CUDA_OK(cudaMemset(pinned, 7, 4096));                    // pinned: waits for the kernel ahead of it
  EXPECT_EQ(cudaSuccess, cudaStreamQuery(nullptr));
  EXPECT_EQ(7, static_cast<unsigned char*>(pinned)[4095]);
  CUDA_OK(launch(kernel("k_50ms")));
  CUDA_OK(cudaMemsetAsync(pinned, 9, 4096, nullptr));
  EXPECT_EQ(cudaErrorNotReady, cudaStreamQuery(nullptr));  // the Async form did not wait
  CUDA_OK(cudaDeviceSynchronize());
  EXPECT_EQ(9, static_cast<unsigned char*>(pinned)[0]);
  CUDA_OK(cudaFreeHost(pinned));
  CUDA_OK(cudaFree(device));
}

TEST(Model, LegacyDefaultStreamWaitsForBlockingStreams) {
  cudaStream_t blocking, non_blocking;
  CUDA_OK(cudaStreamCreate(&blocking));
  CUDA_OK(cudaStreamCreateWithFlags(&non_blocking, cudaStreamNonBlocking));
  cudaEvent_t start, legacy_done, independent_done;
  for (cudaEvent_t* ev : {&start, &legacy_done, &independent_done}) CUDA_OK(cudaEventCreate(ev));
  CUDA_OK(cudaEventRecord(start, blocking));
  CUDA_OK(launch(kernel("k_50ms"), blocking));
  CUDA_OK(cudaEventRecord(legacy_done, nullptr));  // the NULL stream waits for `blocking`
  CUDA_OK(cudaEventRecord(independent_done, non_blocking));
  CUDA_OK(cudaDeviceSynchronize());
  EXPECT_GE(elapsed_ms(start, legacy_done), 50.0f);
  EXPECT_LT(elapsed_ms(start, independent_done), 50.0f);
}

TEST(Model, PerThreadDefaultStreamsAreIndependent) {
  // This thread keeps its per-thread stream busy; another thread's stays idle,
  // and the _ptsz entry points address the per-thread stream for NULL.
  CUDA_OK(cudaLaunchKernel_ptsz(kernel("k_50ms"), dim3(1), dim3(1), nullptr, 0, nullptr));
  EXPECT_EQ(cudaErrorNotReady, cudaStreamQuery(cudaStreamPerThread));
  EXPECT_EQ(cudaErrorNotReady, cudaStreamQuery_ptsz(nullptr));
  cudaError_t other = cudaErrorUnknown;
  std::thread([&] { other = cudaStreamQuery(cudaStreamPerThread); }).join();
  EXPECT_EQ(cudaSuccess, other);
  // The per-thread stream is blocking: the legacy NULL stream waits for it.
  cudaEvent_t after;
  CUDA_OK(cudaEventCreate(&after));
  CUDA_OK(cudaEventRecord(after, nullptr));
  EXPECT_EQ(cudaErrorNotReady, cudaEventQuery(after));
  CUDA_OK(cudaStreamSynchronize(cudaStreamPerThread));
  EXPECT_EQ(cudaSuccess, cudaEventQuery(after));
}

TEST(Model, ManyThreadsShareTheDeviceSafely) {
  std::vector<std::thread> threads;
  std::vector<cudaError_t> errors(4, cudaSuccess);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50 && errors[t] == cudaSuccess; ++i) {
        void* p = nullptr;
        cudaError_t e = cudaMalloc(&p, 4096);
        if (e == cudaSuccess) e = cudaMemsetAsync(p, t, 4096, cudaStreamPerThread);
        if (e == cudaSuccess) e = launch(kernel("k_1ms"), cudaStreamPerThread, 2, 32);
        if (e == cudaSuccess) e = cudaFreeAsync(p, cudaStreamPerThread);
        errors[t] = e;
      }
      if (errors[t] == cudaSuccess) errors[t] = cudaStreamSynchronize(cudaStreamPerThread);
    });
  }
  for (std::thread& t : threads) t.join();
  for (cudaError_t e : errors) EXPECT_EQ(cudaSuccess, e);
}

TEST(Model, AFullLaunchQueueBlocksTheHost) {
  // 2000 launches of 100 us: the first 1024 queue at once, each later one
  // waits for a slot, so launching alone takes at least ~976 * 100 us.
  const double launching = wall_ms([] {
    for (int i = 0; i < 2000; ++i) ASSERT_EQ(cudaSuccess, launch(kernel("k_100us")));
  });
  EXPECT_GE(launching, 90.0);
  CUDA_OK(cudaDeviceSynchronize());
}

TEST(Model, BadLaunchesFailCleanly) {
  EXPECT_EQ(cudaErrorInvalidConfiguration, cudaLaunchKernel(kernel("k_1ms"), dim3(1), dim3(2048), nullptr, 0, nullptr));
  static char not_a_kernel;
  EXPECT_EQ(cudaErrorInvalidDeviceFunction, cudaLaunchKernel(&not_a_kernel, dim3(1), dim3(1), nullptr, 0, nullptr));
  EXPECT_EQ(cudaErrorInvalidDeviceFunction, cudaPeekAtLastError());
  cudaGetLastError();
}

}  // namespace
