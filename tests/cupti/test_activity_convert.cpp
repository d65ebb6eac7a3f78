// CUPTI record conversion through the real libcupti, without a GPU: a
// buffer of hand-built CUPTI 13.0 records is walked with
// cuptiActivityGetNextRecord (as the collector will walk CUPTI's own
// buffers) and every field of every converted record is checked.
#include <gtest/gtest.h>

#include <cupti.h>

#include <cstring>
#include <string>
#include <vector>

#include "activity_buffer.h"
#include "activity_convert.h"

namespace gpuscope::cupti {
namespace {

using test::ActivityBuffer;

ConvertContext test_context(std::vector<std::string>* names) {
  ConvertContext ctx;
  ctx.to_monotonic = [](uint64_t t) { return t - 1'000'000; };  // CUPTI's clock 1 ms ahead
  ctx.correlate = [](uint32_t id) { return id == 77 ? uint64_t{5000} : uint64_t{0}; };
  ctx.intern = [names](const char* s) {
    names->push_back(s ? s : "");
    return static_cast<uint32_t>(names->size());
  };
  return ctx;
}

TEST(CuptiConvert, KernelMemcpyMemsetSyncAndMemoryRecords) {
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = 10'000'000, k.end = 10'250'000;
  k.deviceId = 0, k.streamId = 13, k.correlationId = 77;
  k.gridX = 1024, k.gridY = 2, k.gridZ = 1, k.blockX = 256, k.blockY = 1, k.blockZ = 1;
  k.dynamicSharedMemory = 4096;
  k.name = "_Z9vec_scalePff";
  CUpti_ActivityMemcpy6 c{};
  c.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  c.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  c.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, c.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  c.flags = CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC;
  c.bytes = 1 << 20, c.start = 11'000'000, c.end = 11'090'000;
  c.deviceId = 1, c.streamId = 7, c.correlationId = 78;
  CUpti_ActivityMemset4 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  m.value = 0xab, m.bytes = 4096, m.start = 12'000'000, m.end = 12'001'000;
  m.deviceId = 0, m.streamId = 7, m.correlationId = 79, m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  CUpti_ActivitySynchronization2 s{};
  s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
  s.start = 13'000'000, s.end = 13'500'000, s.correlationId = 80, s.streamId = 7, s.cudaEventId = 0xFFFFFFFF;
  CUpti_ActivityMemory4 a{};
  a.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
  a.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
  a.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  a.address = 0x7f0000000000, a.bytes = 64 << 20, a.timestamp = 14'000'000, a.correlationId = 77, a.deviceId = 0;
  a.isAsync = 1;

  ActivityBuffer buf;
  buf.add(k), buf.add(c), buf.add(m), buf.add(s), buf.add(a);
  const auto records = buf.records();
  ASSERT_EQ(records.size(), 5u) << "cuptiActivityGetNextRecord walked a different number of records";
  std::vector<std::string> names;
  const ConvertContext ctx = test_context(&names);

  const auto kr = std::get<fb::Kernel>(*convert(*records[0], ctx));
  EXPECT_EQ(kr.start_ns(), 9'000'000u);
  EXPECT_EQ(kr.duration_ns(), 250'000u);
  EXPECT_EQ(kr.correlation_id(), 5000u);
  EXPECT_EQ(kr.stream(), 13u);
  EXPECT_EQ(kr.grid_x(), 1024u);
  EXPECT_EQ(kr.grid_y(), 2);
  EXPECT_EQ(kr.block_x(), 256);
  EXPECT_EQ(kr.device(), 0);
  EXPECT_EQ(kr.dynamic_shared_bytes(), 4096u);
  EXPECT_EQ(kr.source(), fb::Source::Device);
  ASSERT_EQ(names.size(), 1u);
  EXPECT_EQ(names[0], "_Z9vec_scalePff");
  EXPECT_EQ(kr.name_id(), 1u);

  const auto cr = std::get<fb::Copy>(*convert(*records[1], ctx));
  EXPECT_EQ(cr.start_ns(), 10'000'000u);
  EXPECT_EQ(cr.duration_ns(), 90'000u);
  EXPECT_EQ(cr.bytes(), 1u << 20);
  EXPECT_EQ(cr.direction(), fb::CopyDirection::HostToDevice);
  EXPECT_EQ(cr.src_kind(), fb::MemoryKind::Pageable);
  EXPECT_EQ(cr.dst_kind(), fb::MemoryKind::Device);
  EXPECT_EQ(cr.flags(), 1);
  EXPECT_EQ(cr.device(), 1);
  EXPECT_EQ(cr.stream(), 7u);
  EXPECT_EQ(cr.correlation_id(), 0u);  // unknown launching call
  EXPECT_EQ(cr.source(), fb::Source::Device);

  const auto mr = std::get<fb::Memset>(*convert(*records[2], ctx));
  EXPECT_EQ(mr.bytes(), 4096u);
  EXPECT_EQ(mr.value(), 0xabu);
  EXPECT_EQ(mr.duration_ns(), 1000u);
  EXPECT_EQ(mr.memory_kind(), fb::MemoryKind::Device);

  const auto sr = std::get<fb::Sync>(*convert(*records[3], ctx));
  EXPECT_EQ(sr.kind(), fb::SyncKind::Stream);
  EXPECT_EQ(sr.object(), 7u);
  EXPECT_EQ(sr.duration_ns(), 500'000u);
  EXPECT_EQ(sr.source(), fb::Source::Device);

  const auto ar = std::get<fb::Alloc>(*convert(*records[4], ctx));
  EXPECT_EQ(ar.op(), fb::AllocOp::Free);
  EXPECT_EQ(ar.address(), 0x7f0000000000u);
  EXPECT_EQ(ar.bytes(), 64u << 20);
  EXPECT_EQ(ar.start_ns(), 13'000'000u);
  EXPECT_EQ(ar.correlation_id(), 5000u);
  EXPECT_EQ(ar.flags(), 1);
}

TEST(CuptiConvert, NonsenseAndUnconvertedRecordsAreSkipped) {
  CUpti_ActivityKernel10 backwards{};
  backwards.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  backwards.start = 20, backwards.end = 10;
  CUpti_ActivityAPI api{};
  api.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  ActivityBuffer buf;
  buf.add(backwards), buf.add(api);
  const auto records = buf.records();
  ASSERT_EQ(records.size(), 2u);
  std::vector<std::string> names;
  EXPECT_FALSE(convert(*records[0], test_context(&names)).has_value());
  EXPECT_FALSE(convert(*records[1], test_context(&names)).has_value());
}

TEST(CuptiConvert, KindTables) {
  EXPECT_EQ(copy_direction(CUPTI_ACTIVITY_MEMCPY_KIND_DTOH), fb::CopyDirection::DeviceToHost);
  EXPECT_EQ(copy_direction(CUPTI_ACTIVITY_MEMCPY_KIND_DTOD), fb::CopyDirection::DeviceToDevice);
  EXPECT_EQ(copy_direction(CUPTI_ACTIVITY_MEMCPY_KIND_PTOP), fb::CopyDirection::PeerToPeer);
  EXPECT_EQ(copy_direction(200), fb::CopyDirection::Unknown);
  EXPECT_EQ(memory_kind(CUPTI_ACTIVITY_MEMORY_KIND_PINNED), fb::MemoryKind::Pinned);
  EXPECT_EQ(memory_kind(CUPTI_ACTIVITY_MEMORY_KIND_MANAGED), fb::MemoryKind::Managed);
  EXPECT_EQ(sync_kind(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE), fb::SyncKind::Event);
  EXPECT_EQ(sync_kind(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE), fb::SyncKind::Context);
}

TEST(CuptiConvert, VersionGuardAcceptsOnlyTheCompiledLayouts) {
  uint32_t runtime = 0;
  ASSERT_EQ(cuptiGetVersion(&runtime), CUPTI_SUCCESS);  // works without a driver
  EXPECT_TRUE(layouts_compatible(runtime)) << "toolkit CUPTI " << runtime << " vs compiled " << kCompiledCuptiApiVersion;
  EXPECT_TRUE(layouts_compatible(130000));
  EXPECT_TRUE(layouts_compatible(130001));
  EXPECT_FALSE(layouts_compatible(130200));  // 13.2: Kernel11
  EXPECT_FALSE(layouts_compatible(120800));
}

}  // namespace
}  // namespace gpuscope::cupti
