// Stream callbacks and host functions, on tests/nodes/test.json (kernels
// k_1ms/k_10ms/k_50ms of fixed length).  They run on simgpu's host thread when
// their stream reaches them, in stream order, and hold later work of that
// stream until they return.
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include <cuda.h>

#include "test_support.hpp"

namespace {

using simgpu_test::elapsed_ms;
using simgpu_test::kernel;
using simgpu_test::launch;
using simgpu_test::now_ms;

struct Log {
  std::mutex mu;
  std::vector<int> order;
  std::vector<double> at_ms;
  std::vector<std::thread::id> threads;
  void add(int id) {
    std::lock_guard lock(mu);
    order.push_back(id);
    at_ms.push_back(now_ms());
    threads.push_back(std::this_thread::get_id());
  }
};

struct CallbackArgs {
  Log* log;
  int id;
  cudaStream_t stream_seen = nullptr;
  cudaError_t status_seen = cudaErrorUnknown;
};

void CUDART_CB stream_callback(cudaStream_t s, cudaError_t status, void* data) {
  auto* args = static_cast<CallbackArgs*>(data);
  args->stream_seen = s;
  args->status_seen = status;
  args->log->add(args->id);
}

void CUDART_CB host_function(void* data) {
  auto* args = static_cast<CallbackArgs*>(data);
  args->log->add(args->id);
}

void CUDART_CB sleep_30ms(void*) { std::this_thread::sleep_for(std::chrono::milliseconds(30)); }

TEST(Callbacks, RunInStreamOrderWhenTheStreamReachesThem) {
  Log log;
  CallbackArgs first{&log, 1}, second{&log, 2};
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  const double queued_at = now_ms();
  CUDA_OK(launch(kernel("k_50ms"), s));
  CUDA_OK(cudaStreamAddCallback(s, stream_callback, &first, 0));
  CUDA_OK(launch(kernel("k_10ms"), s));
  CUDA_OK(cudaLaunchHostFunc(s, host_function, &second));
  {
    std::lock_guard lock(log.mu);
    EXPECT_TRUE(log.order.empty());  // the calls returned; the stream is 50 ms from the first
  }
  CUDA_OK(cudaStreamSynchronize(s));
  ASSERT_EQ((std::vector<int>{1, 2}), log.order);
  EXPECT_GE(log.at_ms[0] - queued_at, 49.0);
  EXPECT_GE(log.at_ms[1] - log.at_ms[0], 9.0);  // after the 10 ms kernel
  EXPECT_NE(std::this_thread::get_id(), log.threads[0]);
  EXPECT_EQ(s, first.stream_seen);
  EXPECT_EQ(cudaSuccess, first.status_seen);
  CUDA_OK(cudaStreamDestroy(s));
}

TEST(Callbacks, HoldLaterWorkOfTheirStreamUntilTheyReturn) {
  cudaStream_t s, other;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  cudaEvent_t before, after, other_done;
  for (cudaEvent_t* e : {&before, &after, &other_done}) CUDA_OK(cudaEventCreate(e));
  CUDA_OK(cudaEventRecord(before, s));
  CUDA_OK(cudaLaunchHostFunc(s, sleep_30ms, nullptr));
  CUDA_OK(launch(kernel("k_1ms"), s));
  CUDA_OK(cudaEventRecord(after, s));
  CUDA_OK(launch(kernel("k_1ms"), other));  // another stream is not held
  CUDA_OK(cudaEventRecord(other_done, other));
  EXPECT_EQ(cudaErrorNotReady, cudaStreamQuery(s));
  EXPECT_EQ(cudaErrorNotReady, cudaEventQuery(after));
  float ms = 0;
  EXPECT_EQ(cudaErrorNotReady, cudaEventElapsedTime(&ms, before, after));
  CUDA_OK(cudaEventSynchronize(other_done));
  EXPECT_EQ(cudaErrorNotReady, cudaEventQuery(after));  // still sleeping
  CUDA_OK(cudaEventSynchronize(after));
  EXPECT_GE(elapsed_ms(before, after), 31.0f);  // the callback, then the kernel
  CUDA_OK(cudaStreamDestroy(s));
  CUDA_OK(cudaStreamDestroy(other));
}

TEST(Callbacks, OtherStreamsWaitThroughEventsAndTheLegacyStream) {
  cudaStream_t s, waiter;
  CUDA_OK(cudaStreamCreate(&s));  // blocking: the legacy stream follows it
  CUDA_OK(cudaStreamCreateWithFlags(&waiter, cudaStreamNonBlocking));
  cudaEvent_t start, held, waited, legacy;
  for (cudaEvent_t* e : {&start, &held, &waited, &legacy}) CUDA_OK(cudaEventCreate(e));
  CUDA_OK(cudaEventRecord(start, s));
  CUDA_OK(cudaLaunchHostFunc(s, sleep_30ms, nullptr));
  CUDA_OK(cudaEventRecord(held, s));
  CUDA_OK(cudaStreamWaitEvent(waiter, held, 0));
  CUDA_OK(launch(kernel("k_1ms"), waiter));
  CUDA_OK(cudaEventRecord(waited, waiter));
  CUDA_OK(launch(kernel("k_1ms"), nullptr));
  CUDA_OK(cudaEventRecord(legacy, nullptr));
  CUDA_OK(cudaDeviceSynchronize());  // waits for the host function too
  EXPECT_GE(elapsed_ms(start, waited), 31.0f);
  EXPECT_GE(elapsed_ms(start, legacy), 31.0f);
  CUDA_OK(cudaStreamDestroy(s));
  CUDA_OK(cudaStreamDestroy(waiter));
}

TEST(Callbacks, SeeTheBytesCopiedBeforeThem) {
  constexpr size_t kBytes = 1 << 20;
  char *dev = nullptr, *pinned = nullptr;
  CUDA_OK(cudaMalloc(&dev, kBytes));
  CUDA_OK(cudaMallocHost(&pinned, kBytes));
  CUDA_OK(cudaMemset(dev, 9, kBytes));
  std::memset(pinned, 0, kBytes);
  struct Seen {
    char* buffer;
    std::atomic<int> first{-1}, last{-1};
  } seen{pinned};
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  CUDA_OK(launch(kernel("k_10ms"), s));
  CUDA_OK(cudaMemcpyAsync(pinned, dev, kBytes, cudaMemcpyDeviceToHost, s));
  CUDA_OK(cudaLaunchHostFunc(
      s,
      [](void* data) {
        auto* seen = static_cast<Seen*>(data);
        seen->first = seen->buffer[0];
        seen->last = seen->buffer[kBytes - 1];
      },
      &seen));
  CUDA_OK(cudaStreamSynchronize(s));
  EXPECT_EQ(9, seen.first.load());
  EXPECT_EQ(9, seen.last.load());
  CUDA_OK(cudaStreamDestroy(s));
  CUDA_OK(cudaFreeHost(pinned));
  CUDA_OK(cudaFree(dev));
}

TEST(Callbacks, DriverApiAndBadArguments) {
  Log log;
  CallbackArgs args{&log, 7};
  CUDA_OK(cudaSetDevice(0));  // binds the primary context the driver calls use
  CUstream s = nullptr;
  ASSERT_EQ(CUDA_SUCCESS, cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  ASSERT_EQ(CUDA_SUCCESS, cuLaunchHostFunc(s, host_function, &args));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE,
            cuStreamAddCallback(s, [](CUstream, CUresult, void*) {}, nullptr, 1));  // flags must be 0
  EXPECT_EQ(cudaErrorInvalidValue, cudaLaunchHostFunc(s, nullptr, nullptr));
  cudaGetLastError();
  ASSERT_EQ(CUDA_SUCCESS, cuStreamSynchronize(s));
  EXPECT_EQ(std::vector<int>{7}, log.order);
  // A stream destroyed while its host function waits still runs it.
  ASSERT_EQ(CUDA_SUCCESS, cuLaunchHostFunc(s, sleep_30ms, nullptr));
  ASSERT_EQ(CUDA_SUCCESS, cuLaunchHostFunc(s, host_function, &args));
  ASSERT_EQ(CUDA_SUCCESS, cuStreamDestroy(s));
  CUDA_OK(cudaDeviceSynchronize());
  EXPECT_EQ((std::vector<int>{7, 7}), log.order);
}

}  // namespace
