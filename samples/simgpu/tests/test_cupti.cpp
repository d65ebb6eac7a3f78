// simgpu's simulated libcupti.so.13, used as a profiler uses CUPTI: one
// subscriber, API-entry callbacks carrying the correlation id of each call
// that queues device work, allocates or waits, and kernel, copy, memset,
// memory and synchronization records with the model's times, handed over
// in the profiler's buffers. One subscriber per process: each test runs in
// its own (ctest runs them one by one).
#include <cupti.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "test_support.hpp"

namespace {

struct Seen {
  std::vector<uint32_t> entered;  // correlation ids at API entry
  std::vector<CUpti_ActivityKernel10> kernels;
  std::vector<CUpti_ActivityMemcpy6> copies;
  std::vector<CUpti_ActivityMemset4> memsets;
  std::vector<CUpti_ActivityMemory4> memory;
  std::vector<CUpti_ActivitySynchronization2> syncs;
};
Seen g_seen;
std::atomic<bool> g_refuse_buffers{false};  // a profiler at its buffer cap

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void* data) {
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  if (cb->callbackSite == CUPTI_API_ENTER) g_seen.entered.push_back(cb->correlationId);
}

void CUPTIAPI requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  if (g_refuse_buffers) {
    *buffer = nullptr, *size = 0, *max_records = 0;
    return;
  }
  *size = 64 * 1024;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
  *max_records = 0;
}

void CUPTIAPI completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* r = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS) {
    if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
      g_seen.kernels.push_back(*reinterpret_cast<CUpti_ActivityKernel10*>(r));
    else if (r->kind == CUPTI_ACTIVITY_KIND_MEMCPY)
      g_seen.copies.push_back(*reinterpret_cast<CUpti_ActivityMemcpy6*>(r));
    else if (r->kind == CUPTI_ACTIVITY_KIND_MEMSET)
      g_seen.memsets.push_back(*reinterpret_cast<CUpti_ActivityMemset4*>(r));
    else if (r->kind == CUPTI_ACTIVITY_KIND_MEMORY2)
      g_seen.memory.push_back(*reinterpret_cast<CUpti_ActivityMemory4*>(r));
    else if (r->kind == CUPTI_ACTIVITY_KIND_SYNCHRONIZATION)
      g_seen.syncs.push_back(*reinterpret_cast<CUpti_ActivitySynchronization2*>(r));
  }
  std::free(buffer);
}

TEST(SimulatedCupti, RecordsTheModelsWorkWithTheCorrelationOfItsCall) {
  CUDA_OK(cudaFree(nullptr));
  CUpti_SubscriberHandle subscriber = nullptr;
  CUpti_SubscriberParams params{};
  params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  ASSERT_EQ(CUPTI_SUCCESS, cuptiSubscribe_v2(&subscriber, on_callback, nullptr, &params));
  CUpti_SubscriberHandle second = nullptr;
  EXPECT_EQ(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, cuptiSubscribe_v2(&second, on_callback, nullptr, &params));
  ASSERT_EQ(CUPTI_SUCCESS, cuptiActivityRegisterCallbacks(requested, completed));
  ASSERT_EQ(CUPTI_SUCCESS, cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API));
  for (CUpti_ActivityKind k : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET})
    ASSERT_EQ(CUPTI_SUCCESS, cuptiActivityEnable(k));

  void* d = nullptr;
  CUDA_OK(cudaMalloc(&d, 1 << 20));
  std::vector<char> host(1 << 20, 'x');
  CUDA_OK(simgpu_test::launch(simgpu_test::kernel("k_1ms"), nullptr, 4, 32));
  CUDA_OK(cudaMemcpy(d, host.data(), host.size(), cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemset(d, 0, 4096));
  CUDA_OK(cudaDeviceSynchronize());
  ASSERT_EQ(CUPTI_SUCCESS, cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  CUDA_OK(simgpu_test::launch(simgpu_test::kernel("k_100us")));  // not recorded: the kind is off
  CUDA_OK(cudaDeviceSynchronize());
  ASSERT_EQ(CUPTI_SUCCESS, cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));

  ASSERT_EQ(g_seen.kernels.size(), 1u);
  ASSERT_EQ(g_seen.copies.size(), 1u);
  ASSERT_EQ(g_seen.memsets.size(), 1u);
  const auto& k = g_seen.kernels[0];
  EXPECT_STREQ(k.name, "k_1ms");
  EXPECT_EQ(k.gridX, 4);
  EXPECT_EQ(k.blockX, 32);
  EXPECT_GE(k.end - k.start, 1'000'000u) << "the model's kernel length";
  const auto& c = g_seen.copies[0];
  EXPECT_EQ(c.copyKind, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD);
  EXPECT_EQ(c.srcKind, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE);
  EXPECT_EQ(c.dstKind, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
  EXPECT_EQ(c.bytes, host.size());
  EXPECT_GE(c.start, k.end) << "one stream: the copy follows the kernel";
  EXPECT_EQ(g_seen.memsets[0].bytes, 4096u);
  // Every record's correlation id was handed out at its call's entry.
  std::map<uint32_t, int> entered;
  for (uint32_t id : g_seen.entered) ++entered[id];
  for (uint32_t id : {k.correlationId, c.correlationId, g_seen.memsets[0].correlationId}) {
    EXPECT_NE(id, 0u);
    EXPECT_EQ(entered[id], 1) << "correlation " << id;
  }
  EXPECT_EQ(g_seen.entered.size(), 7u)
      << "one entry per call that queued device work (4), allocated (1) or waited (2)";
  size_t dropped = 99;
  ASSERT_EQ(CUPTI_SUCCESS, cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped));
  EXPECT_EQ(dropped, 0u);

  // A profiler that gives no buffer loses the records, counted.
  g_refuse_buffers = true;
  CUDA_OK(cudaMemset(d, 1, 4096));
  CUDA_OK(cudaMemset(d, 2, 4096));
  CUDA_OK(cudaDeviceSynchronize());
  ASSERT_EQ(CUPTI_SUCCESS, cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
  g_refuse_buffers = false;
  EXPECT_EQ(g_seen.memsets.size(), 1u);
  ASSERT_EQ(CUPTI_SUCCESS, cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped));
  EXPECT_EQ(dropped, 2u);
  ASSERT_EQ(CUPTI_SUCCESS, cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped));
  EXPECT_EQ(dropped, 0u) << "counted since the last question";
  cuptiUnsubscribe(subscriber);
  cudaFree(d);
}

// Allocations, frees and waits: MEMORY2 and SYNCHRONIZATION records, each
// with its call's correlation id, as a real driver gives them to CUPTI.
TEST(SimulatedCupti, RecordsAllocationsAndWaitsWithTheirCalls) {
  CUDA_OK(cudaFree(nullptr));
  CUpti_SubscriberHandle subscriber = nullptr;
  CUpti_SubscriberParams params{};
  ASSERT_EQ(CUPTI_SUCCESS, cuptiSubscribe_v2(&subscriber, on_callback, nullptr, &params));
  ASSERT_EQ(CUPTI_SUCCESS, cuptiActivityRegisterCallbacks(requested, completed));
  ASSERT_EQ(CUPTI_SUCCESS, cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API));
  for (CUpti_ActivityKind k : {CUPTI_ACTIVITY_KIND_MEMORY2, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION})
    ASSERT_EQ(CUPTI_SUCCESS, cuptiActivityEnable(k));

  void* d = nullptr;
  CUDA_OK(cudaMalloc(&d, 1 << 20));
  cudaStream_t stream = nullptr;
  cudaEvent_t done = nullptr;
  CUDA_OK(cudaStreamCreate(&stream));
  CUDA_OK(cudaEventCreate(&done));
  CUDA_OK(simgpu_test::launch(simgpu_test::kernel("k_1ms"), stream));
  CUDA_OK(cudaEventRecord(done, stream));
  CUDA_OK(cudaStreamWaitEvent(nullptr, done, 0));
  CUDA_OK(cudaEventSynchronize(done));
  CUDA_OK(cudaStreamSynchronize(stream));
  CUDA_OK(cudaDeviceSynchronize());
  char from[64] = "x", to[64] = {};
  CUDA_OK(cudaMemcpy(to, from, sizeof from, cudaMemcpyHostToHost));  // waits for the stream inside: no sync record
  CUDA_OK(cudaFree(d));
  ASSERT_EQ(CUPTI_SUCCESS, cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));

  ASSERT_EQ(g_seen.memory.size(), 2u);
  const auto& alloc = g_seen.memory[0];
  const auto& release = g_seen.memory[1];
  EXPECT_EQ(alloc.memoryOperationType, CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION);
  EXPECT_EQ(release.memoryOperationType, CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE);
  EXPECT_EQ(alloc.memoryKind, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
  EXPECT_EQ(alloc.address, reinterpret_cast<uintptr_t>(d));
  EXPECT_EQ(release.address, alloc.address);
  EXPECT_EQ(alloc.bytes, 1u << 20);
  EXPECT_LT(alloc.timestamp, release.timestamp);

  ASSERT_EQ(g_seen.syncs.size(), 4u);
  const CUpti_ActivitySynchronizationType in_order[] = {
      CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE,
      CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE};
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(g_seen.syncs[i].type, in_order[i]) << i;
  const auto& event_wait = g_seen.syncs[1];
  EXPECT_GE(event_wait.end - event_wait.start, 900'000u) << "the host waited for the 1 ms kernel";
  EXPECT_EQ(g_seen.syncs[0].cudaEventId, event_wait.cudaEventId) << "one event";
  EXPECT_NE(event_wait.cudaEventId, 0xFFFFFFFFu);
  EXPECT_EQ(g_seen.syncs[3].streamId, 0xFFFFFFFFu) << "a context's wait has no stream";

  // Each record names its own call: one entry per call that made one.
  std::map<uint32_t, int> entered;
  for (uint32_t id : g_seen.entered) ++entered[id];
  std::vector<uint32_t> ids = {alloc.correlationId, release.correlationId};
  for (const auto& s : g_seen.syncs) ids.push_back(s.correlationId);
  for (uint32_t id : ids) {
    EXPECT_NE(id, 0u);
    EXPECT_EQ(entered[id], 1) << "correlation " << id;
  }
  EXPECT_EQ(std::set<uint32_t>(ids.begin(), ids.end()).size(), ids.size());
  cuptiUnsubscribe(subscriber);
}

}  // namespace
