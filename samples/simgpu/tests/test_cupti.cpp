// simgpu's simulated libcupti.so.13, used as a profiler uses CUPTI: one
// subscriber, API-entry callbacks carrying the correlation id of each call
// that queues device work, and kernel, copy and memset records with the
// model's times, handed over in the profiler's buffers.
#include <cupti.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>
#include <vector>

#include "test_support.hpp"

namespace {

struct Seen {
  std::vector<uint32_t> entered;  // correlation ids at API entry
  std::vector<CUpti_ActivityKernel10> kernels;
  std::vector<CUpti_ActivityMemcpy6> copies;
  std::vector<CUpti_ActivityMemset4> memsets;
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
  EXPECT_EQ(g_seen.entered.size(), 4u) << "one entry per call that queued device work";
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

}  // namespace
