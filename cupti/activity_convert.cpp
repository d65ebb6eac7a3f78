#include "activity_convert.h"

namespace gpuscope::cupti {
namespace {

// CUPTI marks "not applicable" 32-bit ids with all ones.
constexpr uint32_t kNotApplicable = 0xFFFFFFFFu;

int16_t device_of(uint32_t id) { return id == kNotApplicable || id > 0x7FFF ? -1 : static_cast<int16_t>(id); }
uint64_t stream_of(uint32_t id) { return id == kNotApplicable ? 0 : id; }

std::optional<DeviceRecord> kernel(const CUpti_ActivityKernel10& k, const ConvertContext& ctx) {
  if (k.end < k.start) return std::nullopt;
  const uint64_t start = ctx.to_monotonic(k.start);
  return fb::Kernel(start, ctx.to_monotonic(k.end) - start, ctx.correlate(k.correlationId), stream_of(k.streamId),
                    ctx.intern(k.name), static_cast<uint32_t>(k.gridX), static_cast<uint16_t>(k.gridY),
                    static_cast<uint16_t>(k.gridZ), static_cast<uint16_t>(k.blockX), static_cast<uint16_t>(k.blockY),
                    static_cast<uint16_t>(k.blockZ), device_of(k.deviceId), static_cast<uint32_t>(k.dynamicSharedMemory),
                    fb::Source::Device, 0, 0, 0);
}

std::optional<DeviceRecord> memcpy_record(const CUpti_ActivityMemcpy6& c, const ConvertContext& ctx) {
  if (c.end < c.start) return std::nullopt;
  const uint64_t start = ctx.to_monotonic(c.start);
  const uint16_t async = (c.flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) != 0 ? 1 : 0;
  return fb::Copy(start, ctx.to_monotonic(c.end) - start, ctx.correlate(c.correlationId), c.bytes,
                  stream_of(c.streamId), copy_direction(c.copyKind), memory_kind(c.srcKind), memory_kind(c.dstKind),
                  fb::Source::Device, device_of(c.deviceId), async);
}

std::optional<DeviceRecord> memset_record(const CUpti_ActivityMemset4& m, const ConvertContext& ctx) {
  if (m.end < m.start) return std::nullopt;
  const uint64_t start = ctx.to_monotonic(m.start);
  return fb::Memset(start, ctx.to_monotonic(m.end) - start, ctx.correlate(m.correlationId), m.bytes,
                    stream_of(m.streamId), m.value, memory_kind(m.memoryKind), fb::Source::Device,
                    device_of(m.deviceId));
}

std::optional<DeviceRecord> sync_record(const CUpti_ActivitySynchronization2& s, const ConvertContext& ctx) {
  if (s.end < s.start) return std::nullopt;
  const uint64_t start = ctx.to_monotonic(s.start);
  const fb::SyncKind kind = sync_kind(s.type);
  const uint64_t object = kind == fb::SyncKind::Event || kind == fb::SyncKind::StreamWaitEvent
                              ? stream_of(s.cudaEventId)
                              : stream_of(s.streamId);
  return fb::Sync(start, ctx.to_monotonic(s.end) - start, ctx.correlate(s.correlationId), object, kind,
                  fb::Source::Device, -1, static_cast<int32_t>(s.returnValue));
}

std::optional<DeviceRecord> memory_record(const CUpti_ActivityMemory4& m, const ConvertContext& ctx) {
  fb::AllocOp op;
  if (m.memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION) op = fb::AllocOp::Alloc;
  else if (m.memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE) op = fb::AllocOp::Free;
  else return std::nullopt;
  return fb::Alloc(ctx.to_monotonic(m.timestamp), 0, ctx.correlate(m.correlationId), m.address, m.bytes, op,
                   memory_kind(m.memoryKind), fb::Source::Device, m.isAsync != 0 ? 1 : 0, device_of(m.deviceId), 0);
}

}  // namespace

bool layouts_compatible(uint32_t runtime_version) {
  // Same major and minor API level: 13.0.x (130001 compiled here) accepts
  // 130000..130099; 13.2 renumbers the kernel record.
  return runtime_version / 100 == kCompiledCuptiApiVersion / 100;
}

fb::CopyDirection copy_direction(uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return fb::CopyDirection::HostToDevice;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return fb::CopyDirection::DeviceToHost;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return fb::CopyDirection::DeviceToDevice;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return fb::CopyDirection::HostToHost;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return fb::CopyDirection::PeerToPeer;
    default: return fb::CopyDirection::Unknown;
  }
}

fb::MemoryKind memory_kind(uint32_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE: return fb::MemoryKind::Pageable;
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED: return fb::MemoryKind::Pinned;
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE: return fb::MemoryKind::Device;
    case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY: return fb::MemoryKind::Array;
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED: return fb::MemoryKind::Managed;
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC: return fb::MemoryKind::DeviceStatic;
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC: return fb::MemoryKind::ManagedStatic;
    default: return fb::MemoryKind::Unknown;
  }
}

fb::SyncKind sync_kind(uint32_t type) {
  switch (type) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE: return fb::SyncKind::Event;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT: return fb::SyncKind::StreamWaitEvent;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE: return fb::SyncKind::Stream;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE: return fb::SyncKind::Context;
    default: return fb::SyncKind::Unknown;
  }
}

std::optional<DeviceRecord> convert(const CUpti_Activity& record, const ConvertContext& ctx) {
  switch (record.kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL:
      return kernel(reinterpret_cast<const CUpti_ActivityKernel10&>(record), ctx);
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return memcpy_record(reinterpret_cast<const CUpti_ActivityMemcpy6&>(record), ctx);
    case CUPTI_ACTIVITY_KIND_MEMSET:
      return memset_record(reinterpret_cast<const CUpti_ActivityMemset4&>(record), ctx);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      return sync_record(reinterpret_cast<const CUpti_ActivitySynchronization2&>(record), ctx);
    case CUPTI_ACTIVITY_KIND_MEMORY2:
      return memory_record(reinterpret_cast<const CUpti_ActivityMemory4&>(record), ctx);
    default:
      return std::nullopt;
  }
}

}  // namespace gpuscope::cupti
