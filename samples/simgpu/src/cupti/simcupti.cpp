// simgpu's libcupti.so.13: the CUPTI calls a profiler makes for activity
// records and API-entry callbacks, answered from simgpu's device model
// (src/common/simgpu_activity.h), so a profiler's CUPTI path runs end to
// end on a machine without a GPU. Test and demo infrastructure: it is found
// only where named (GPUSCOPE_CUPTI_PATH, say), and the driver only injects
// a profiler when SIMGPU_INJECTION=1.
//
// Modeled: one subscriber; the runtime and driver callback domains (API
// entry and exit, with the call's correlation id, in every call that queues
// device work); CONCURRENT_KERNEL, MEMCPY and MEMSET records with the
// model's start and end; MEMORY2 records of cuMemAlloc/cuMemAllocHost/
// cuMemAllocManaged and their frees (not stream-ordered pools, graphs or
// the virtual memory API); SYNCHRONIZATION records of stream, event and
// context synchronizes (the host's wait) and of cuStreamWaitEvent; buffers
// requested from and completed to the
// profiler, on a flush thread every flush period for records whose end has
// passed, and all of them at a forced flush; records no buffer took are
// counted as dropped. Everything else a profiler
// may call answers CUPTI_SUCCESS without effect (timestamp callback, thread
// id type) or is not exported.
#include <cupti.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "simgpu_activity.h"

namespace {

using simgpu::DeviceRecord;

struct State {
  std::mutex mu;
  // One delivery at a time: a forced flush returns only once every record
  // taken before it (by the flush thread too) is in the profiler's hands.
  std::mutex deliver_mu;
  CUpti_CallbackFunc callback = nullptr;
  void* userdata = nullptr;
  bool subscribed = false;
  std::atomic<bool> callbacks_on{false};
  std::atomic<uint32_t> kinds{0};  // bits: 1 kernel, 2 memcpy, 4 memset, 8 memory, 16 synchronization
  CUpti_BuffersCallbackRequestFunc request = nullptr;
  CUpti_BuffersCallbackCompleteFunc complete = nullptr;
  std::vector<DeviceRecord> pending;       // under mu, names interned
  std::unordered_set<std::string> names;  // under mu; never shrinks: records point into it
  std::atomic<uint32_t> period_ms{100};
  std::atomic<uint32_t> next_correlation{0};
  std::atomic<uint64_t> dropped{0};  // records no buffer took, since the profiler last asked
  std::once_flag flusher;
};

State& state() {
  static auto* s = new State;  // never destroyed: the flush thread outlives static destruction
  return *s;
}

uint32_t kind_bit(uint32_t record_kind) {
  switch (record_kind) {
    case DeviceRecord::Kernel: return 1;
    case DeviceRecord::Copy: return 2;
    case DeviceRecord::Memset: return 4;
    case DeviceRecord::Alloc:
    case DeviceRecord::Free: return 8;
    case DeviceRecord::Sync: return 16;
    default: return 0;
  }
}

uint32_t activity_bit(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return 1;
    case CUPTI_ACTIVITY_KIND_MEMCPY: return 2;
    case CUPTI_ACTIVITY_KIND_MEMSET: return 4;
    case CUPTI_ACTIVITY_KIND_MEMORY2: return 8;
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return 16;
    default: return 0;
  }
}

size_t record_size(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_MEMORY2: return sizeof(CUpti_ActivityMemory4);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return sizeof(CUpti_ActivitySynchronization2);
    default: return 0;
  }
}

size_t aligned(size_t n) { return (n + 7) & ~size_t{7}; }

constexpr size_t kLargestRecord = std::max({sizeof(CUpti_ActivityKernel10), sizeof(CUpti_ActivityMemcpy6),
                                            sizeof(CUpti_ActivityMemset4), sizeof(CUpti_ActivityMemory4),
                                            sizeof(CUpti_ActivitySynchronization2)});

int64_t monotonic_now() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// --- the device model's side --------------------------------------------------

uint32_t on_enter() {
  State& s = state();
  const uint32_t id = s.next_correlation.fetch_add(1, std::memory_order_relaxed) + 1;
  if (!s.callbacks_on.load(std::memory_order_acquire) || s.callback == nullptr) return id;
  CUpti_CallbackData data{};
  data.correlationId = id;
  data.functionName = "simgpu";
  data.callbackSite = CUPTI_API_ENTER;
  s.callback(s.userdata, CUPTI_CB_DOMAIN_DRIVER_API, 0, &data);
  data.callbackSite = CUPTI_API_EXIT;
  s.callback(s.userdata, CUPTI_CB_DOMAIN_DRIVER_API, 0, &data);
  return id;
}

void on_record(const DeviceRecord& r) {
  State& s = state();
  if ((s.kinds.load(std::memory_order_acquire) & kind_bit(r.kind)) == 0) return;
  std::lock_guard lock(s.mu);
  DeviceRecord copy = r;
  if (r.name != nullptr) copy.name = s.names.emplace(r.name).first->c_str();
  s.pending.push_back(copy);
}

// --- records into buffers -------------------------------------------------------

template <typename Record>
size_t put(const Record& record, uint8_t* at) {
  std::memcpy(at, &record, sizeof record);
  return sizeof record;
}

CUpti_ActivityKernel10 kernel_record(const DeviceRecord& r) {
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = static_cast<uint64_t>(r.start_ns), k.end = static_cast<uint64_t>(r.end_ns);
  k.deviceId = r.device, k.contextId = 1, k.streamId = static_cast<uint32_t>(r.stream_id);
  k.correlationId = r.correlation;
  k.gridX = static_cast<int32_t>(r.grid[0]), k.gridY = static_cast<int32_t>(r.grid[1]);
  k.gridZ = static_cast<int32_t>(r.grid[2]);
  k.blockX = static_cast<int32_t>(r.block[0]), k.blockY = static_cast<int32_t>(r.block[1]);
  k.blockZ = static_cast<int32_t>(r.block[2]);
  k.name = r.name;
  return k;
}

CUpti_ActivityMemcpy6 copy_record(const DeviceRecord& r) {
  CUpti_ActivityMemcpy6 c{};
  c.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  c.copyKind = r.copy_kind, c.srcKind = r.src_kind, c.dstKind = r.dst_kind;
  c.flags = r.async ? CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC : CUPTI_ACTIVITY_FLAG_NONE;
  c.bytes = r.bytes;
  c.start = static_cast<uint64_t>(r.start_ns), c.end = static_cast<uint64_t>(r.end_ns);
  c.deviceId = r.device, c.contextId = 1, c.streamId = static_cast<uint32_t>(r.stream_id);
  c.correlationId = r.correlation;
  return c;
}

CUpti_ActivityMemset4 memset_record(const DeviceRecord& r) {
  CUpti_ActivityMemset4 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  m.bytes = r.bytes;
  m.memoryKind = r.dst_kind;
  m.start = static_cast<uint64_t>(r.start_ns), m.end = static_cast<uint64_t>(r.end_ns);
  m.deviceId = r.device, m.contextId = 1, m.streamId = static_cast<uint32_t>(r.stream_id);
  m.correlationId = r.correlation;
  return m;
}

CUpti_ActivityMemory4 memory_record(const DeviceRecord& r) {
  CUpti_ActivityMemory4 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
  m.memoryOperationType = r.kind == DeviceRecord::Alloc ? CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION
                                                        : CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
  m.memoryKind = static_cast<CUpti_ActivityMemoryKind>(r.dst_kind);
  m.correlationId = r.correlation;
  m.address = r.address, m.bytes = r.bytes;
  m.timestamp = static_cast<uint64_t>(r.start_ns);
  m.deviceId = r.device, m.contextId = 1, m.streamId = simgpu::kNotApplicable;  // synchronous calls: no stream
  return m;
}

CUpti_ActivitySynchronization2 sync_record(const DeviceRecord& r) {
  CUpti_ActivitySynchronization2 s{};
  s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  s.type = static_cast<CUpti_ActivitySynchronizationType>(r.sync_type);
  s.start = static_cast<uint64_t>(r.start_ns), s.end = static_cast<uint64_t>(r.end_ns);
  s.correlationId = r.correlation;
  s.contextId = 1, s.streamId = static_cast<uint32_t>(r.stream_id);
  s.cudaEventId = r.event_id != 0 ? r.event_id : simgpu::kNotApplicable;
  return s;
}

size_t write_record(const DeviceRecord& r, uint8_t* at) {
  switch (r.kind) {
    case DeviceRecord::Kernel: return put(kernel_record(r), at);
    case DeviceRecord::Copy: return put(copy_record(r), at);
    case DeviceRecord::Memset: return put(memset_record(r), at);
    case DeviceRecord::Alloc:
    case DeviceRecord::Free: return put(memory_record(r), at);
    default: return put(sync_record(r), at);
  }
}

// Hands `records` to the profiler in as many buffers as it takes. Those no
// buffer takes (the profiler gave none, or one too small for a record) are
// dropped and counted, as CUPTI counts them.
void deliver(const std::vector<DeviceRecord>& records) {
  State& s = state();
  size_t i = 0;
  while (i < records.size() && s.request != nullptr && s.complete != nullptr) {
    uint8_t* buffer = nullptr;
    size_t size = 0, max_records = 0;
    s.request(&buffer, &size, &max_records);
    if (buffer == nullptr) break;
    size_t used = 0;
    for (; i < records.size(); ++i) {
      if (aligned(used) + kLargestRecord > size) break;
      used = aligned(used);
      used += write_record(records[i], buffer + used);
    }
    s.complete(nullptr, 0, buffer, size, used);
    if (used == 0) break;
  }
  s.dropped.fetch_add(records.size() - i, std::memory_order_relaxed);
}

// The records whose operation has ended (all of them when forced), taken
// out under the lock and delivered outside it: the profiler's completion
// handler takes its own locks.
void flush(bool forced) {
  State& s = state();
  std::lock_guard delivering(s.deliver_mu);
  std::vector<DeviceRecord> due;
  {
    std::lock_guard lock(s.mu);
    const int64_t now = monotonic_now();
    std::vector<DeviceRecord> later;
    for (const DeviceRecord& r : s.pending) (forced || r.end_ns <= now ? due : later).push_back(r);
    s.pending.swap(later);
  }
  deliver(due);
}

void start_flusher() {
  std::thread([] {
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(state().period_ms.load()));
      flush(false);
    }
  }).detach();
}

// The model's table, through the driver's private-table entry point.
bool connect_to_driver() {
  const void* table = nullptr;
  if (cuGetExportTable(&table, &simgpu::kSimgpuActivityTableId) != CUDA_SUCCESS || table == nullptr) return false;
  static_cast<const simgpu::ActivityTable*>(table)->set_sink(on_enter, on_record);
  return true;
}

}  // namespace

extern "C" {

CUptiResult CUPTIAPI cuptiGetVersion(uint32_t* version) {
  if (version == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *version = CUPTI_API_VERSION;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result, const char** str) {
  if (str == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *str = result == CUPTI_SUCCESS ? "CUPTI_SUCCESS" : "CUPTI_ERROR (simgpu)";
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t* timestamp) {
  if (timestamp == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *timestamp = static_cast<uint64_t>(monotonic_now());
  return CUPTI_SUCCESS;
}

// simgpu's times are CLOCK_MONOTONIC already: what a profiler's callback returns.
CUptiResult CUPTIAPI cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc) { return CUPTI_SUCCESS; }
CUptiResult CUPTIAPI cuptiSetThreadIdType(CUpti_ActivityThreadIdType) { return CUPTI_SUCCESS; }

CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                                   CUpti_BuffersCallbackCompleteFunc complete) {
  if (request == nullptr || complete == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  State& s = state();
  std::lock_guard lock(s.mu);
  s.request = request;
  s.complete = complete;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiSubscribe_v2(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback, void* userdata,
                                       CUpti_SubscriberParams* params) {
  if (subscriber == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  State& s = state();
  std::lock_guard lock(s.mu);
  if (s.subscribed) {
    if (params != nullptr && params->oldSubscriberName != nullptr && params->oldSubscriberSize != 0)
      std::strncpy(params->oldSubscriberName, "simgpu subscriber", params->oldSubscriberSize);
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  }
  if (!connect_to_driver()) return CUPTI_ERROR_NOT_INITIALIZED;  // not simgpu's driver
  s.callback = callback;
  s.userdata = userdata;
  s.subscribed = true;
  *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(&s);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle) {
  State& s = state();
  std::lock_guard lock(s.mu);
  s.subscribed = false;
  s.callbacks_on.store(false);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle, CUpti_CallbackDomain domain) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API || domain == CUPTI_CB_DOMAIN_DRIVER_API)
    state().callbacks_on.store(enable != 0, std::memory_order_release);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle, CUpti_CallbackDomain domain,
                                         CUpti_CallbackId) {
  return cuptiEnableDomain(enable, nullptr, domain);
}

// Names no call id: a profiler then takes whole domains.
CUptiResult CUPTIAPI cuptiGetCallbackName(CUpti_CallbackDomain, uint32_t, const char**) {
  return CUPTI_ERROR_INVALID_PARAMETER;
}

CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind) {
  State& s = state();
  s.kinds.fetch_or(activity_bit(kind), std::memory_order_acq_rel);
  std::call_once(s.flusher, start_flusher);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind) {
  state().kinds.fetch_and(~activity_bit(kind), std::memory_order_acq_rel);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag) {
  flush((flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) != 0);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityFlushPeriod(uint32_t time_ms) {
  state().period_ms.store(time_ms != 0 ? time_ms : 100);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
  if (buffer == nullptr || record == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  size_t offset = 0;
  if (*record != nullptr) {
    const size_t size = record_size((*record)->kind);
    if (size == 0) return CUPTI_ERROR_INVALID_KIND;
    offset = aligned(static_cast<size_t>(reinterpret_cast<uint8_t*>(*record) - buffer) + size);
  }
  if (offset + sizeof(CUpti_Activity) > valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = reinterpret_cast<CUpti_Activity*>(buffer + offset);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) {
  if (dropped == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *dropped = state().dropped.exchange(0, std::memory_order_relaxed);
  return CUPTI_SUCCESS;
}

}  // extern "C"
