#include "activity.hpp"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "../common/clock.hpp"

namespace simgpu::drv {
namespace {

std::atomic<ActivityEnterFn> g_enter{nullptr};
std::atomic<ActivityRecordFn> g_record{nullptr};

void set_sink(ActivityEnterFn enter, ActivityRecordFn record) {
  g_enter.store(enter, std::memory_order_release);
  g_record.store(record, std::memory_order_release);
}

const ActivityTable kTable{sizeof(ActivityTable), set_sink};

// Whether anyone takes records: nothing is built otherwise.
bool activity_wanted() { return g_record.load(std::memory_order_acquire) != nullptr; }

}  // namespace

const void* activity_export_table(const CUuuid& id) {
  return std::memcmp(id.bytes, kSimgpuActivityTableId.bytes, sizeof id.bytes) == 0 ? &kTable : nullptr;
}

uint32_t activity_enter() {
  const ActivityEnterFn enter = g_enter.load(std::memory_order_acquire);
  return enter != nullptr ? enter() : 0;
}

void activity_record(const DeviceRecord& record) {
  if (const ActivityRecordFn fn = g_record.load(std::memory_order_acquire)) fn(record);
}

void activity_memory(DeviceRecord::Kind op, int device, uint64_t address, uint64_t bytes, uint8_t memory_kind) {
  if (!activity_wanted()) return;
  DeviceRecord r;
  r.kind = op;
  r.device = static_cast<uint32_t>(device);
  r.correlation = activity_enter();
  r.start_ns = r.end_ns = now_ns();
  r.address = address;
  r.bytes = bytes;
  r.dst_kind = memory_kind;
  activity_record(r);
}

void activity_sync(uint8_t sync_type, int device, uint64_t stream_id, uint32_t event_id, int64_t start_ns) {
  if (!activity_wanted()) return;
  DeviceRecord r;
  r.kind = DeviceRecord::Sync;
  r.device = static_cast<uint32_t>(device);
  r.correlation = activity_enter();
  r.stream_id = stream_id;
  r.event_id = event_id;
  r.sync_type = sync_type;
  r.start_ns = start_ns;
  r.end_ns = now_ns();
  activity_record(r);
}

void inject_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    const char* wanted = std::getenv("SIMGPU_INJECTION");
    const char* path = std::getenv("CUDA_INJECTION64_PATH");
    if (wanted == nullptr || std::strcmp(wanted, "1") != 0 || path == nullptr || *path == '\0') return;
    void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) return;  // the real driver goes on without it too
    if (auto* init = reinterpret_cast<int (*)()>(dlsym(handle, "InitializeInjection"))) init();
  });
}

}  // namespace simgpu::drv
