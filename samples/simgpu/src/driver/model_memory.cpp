// Device model: allocations, copies and memsets.  Device memory is anonymous
// host memory (MAP_NORESERVE, so a 100 GiB cudaMalloc costs nothing until
// touched); the model charges host time for allocation and copies occupy the
// copy engines for bytes / bandwidth.
#include <sys/mman.h>

#include <algorithm>
#include <cstring>

#include "../common/clock.hpp"
#include "model.hpp"

namespace simgpu::drv {
namespace {

constexpr size_t kPage = 4096;
constexpr double kMiB = 1024.0 * 1024.0;

// Pinned host memory is resident, as page-locking makes it: populate it now
// so its first copy does not pay page faults the model does not charge.
void* map_memory(size_t bytes, bool populate = false) {
  const size_t len = (bytes + kPage - 1) / kPage * kPage;
  const int flags = MAP_PRIVATE | MAP_ANONYMOUS | (populate ? MAP_POPULATE : MAP_NORESERVE);
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, flags, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

void unmap_memory(const Allocation& a) {
  if (a.mapped) munmap(reinterpret_cast<void*>(a.base), (a.size + kPage - 1) / kPage * kPage);
}

bool is_device_kind(MemKind k) { return k == MemKind::Device || k == MemKind::Managed; }
bool is_pinned_kind(MemKind k) { return k == MemKind::HostPinned || k == MemKind::HostRegistered; }

int64_t alloc_cost(const HostCosts& c, MemKind kind, size_t bytes) {
  const double mib = static_cast<double>(bytes) / kMiB;
  if (kind == MemKind::HostPinned) return us_to_ns(c.host_alloc + c.host_alloc_per_mib * mib);
  return us_to_ns(c.malloc + c.malloc_per_mib * mib);
}

size_t extent(size_t width, size_t height, size_t pitch) {
  return height == 0 ? 0 : (height - 1) * pitch + width;
}

// memmove, minus a host-CPU pathology: glibc's "rep movsb" runs at a tenth
// of its speed on some x86 parts (AMD EPYC here) when the destination sits
// just past the source modulo 4 KiB -- which is exactly how a malloc'ed host
// buffer (page + 16) lines up with page-aligned device memory.  Those copies
// go through 64-byte chunks instead, so host memory speed never overrides
// the modeled PCIe time.
void copy_bytes(char* dst, const char* src, size_t n) {
  const uintptr_t skew = (reinterpret_cast<uintptr_t>(dst) - reinterpret_cast<uintptr_t>(src)) & 4095;
  const bool overlap = dst < src + n && src < dst + n;
  if (overlap || skew == 0 || skew >= 256 || n < 4096) {
    std::memmove(dst, src, n);
    return;
  }
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    char chunk[64];
    std::memcpy(chunk, src + i, 64);
    std::memcpy(dst + i, chunk, 64);
  }
  std::memcpy(dst + i, src + i, n - i);
}

void move_bytes(const CopyRequest& r) {
  auto* dst = static_cast<char*>(r.dst);
  const auto* src = static_cast<const char*>(r.src);
  if (r.height == 1 || (r.dst_pitch == r.width && r.src_pitch == r.width)) {
    copy_bytes(dst, src, r.width * r.height);
    return;
  }
  for (size_t row = 0; row < r.height; ++row) copy_bytes(dst + row * r.dst_pitch, src + row * r.src_pitch, r.width);
}

template <class T>
void fill(void* dst, T value, size_t count) {
  std::fill_n(static_cast<T*>(dst), count, value);
}

}  // namespace

bool Model::find_allocation(const void* p, size_t bytes, Allocation* out) {
  std::lock_guard lock(mu_);
  return find_locked(p, bytes, out);
}

bool Model::find_locked(const void* p, size_t bytes, Allocation* out) const {
  const auto addr = reinterpret_cast<uintptr_t>(p);
  auto it = allocations_.upper_bound(addr);
  if (it == allocations_.begin()) return false;
  --it;
  const Allocation& a = it->second;
  if (addr < a.base || addr + bytes > a.base + a.size) return false;
  if (out) *out = a;
  return true;
}

CUresult Model::mem_alloc(size_t bytes, MemKind kind, unsigned flags, void** out) {
  if (!out || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  int dev = 0;
  if (CUresult r = current_device(&dev)) return r;
  if (is_device_kind(kind)) {
    size_t free_bytes = 0, total = 0;
    mem_info(&free_bytes, &total);
    if (bytes > free_bytes) return CUDA_ERROR_OUT_OF_MEMORY;
  }
  // The real work of mapping counts towards the modeled cost, not on top.
  const int64_t start = now_ns();
  void* p = map_memory(bytes, kind == MemKind::HostPinned);
  if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
  wait_until(start + alloc_cost(node_.costs, kind, bytes));
  std::lock_guard lock(mu_);
  allocations_[reinterpret_cast<uintptr_t>(p)] = Allocation{reinterpret_cast<uintptr_t>(p), bytes, dev, kind, flags, true};
  if (is_device_kind(kind)) {
    devices_[dev].memory_used += bytes;
    shared_.add_process_memory(devices_[dev].node_index, static_cast<int64_t>(bytes));
  }
  *out = p;
  return CUDA_SUCCESS;
}

CUresult Model::mem_alloc_async(size_t bytes, CUstream s, bool per_thread, void** out) {
  if (!out || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  {
    std::lock_guard lock(mu_);
    CUstream_st* st = nullptr;
    if (CUresult r = resolve_stream(s, per_thread, &st)) return r;
  }
  size_t free_bytes = 0, total = 0;
  if (CUresult r = mem_info(&free_bytes, &total)) return r;
  if (bytes > free_bytes) return CUDA_ERROR_OUT_OF_MEMORY;
  // A stream-ordered allocation is served from the pool: no page mapping, no
  // device synchronization, only a little host time.
  spend_host_time(us_to_ns(node_.costs.async_alloc));
  void* p = map_memory(bytes);
  if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
  int dev = 0;
  current_device(&dev);
  std::lock_guard lock(mu_);
  allocations_[reinterpret_cast<uintptr_t>(p)] = Allocation{reinterpret_cast<uintptr_t>(p), bytes, dev, MemKind::Device, 0, true};
  devices_[dev].memory_used += bytes;
  shared_.add_process_memory(devices_[dev].node_index, static_cast<int64_t>(bytes));
  *out = p;
  return CUDA_SUCCESS;
}

CUresult Model::free_locked(void* p, bool host, Allocation* freed) {
  auto it = allocations_.find(reinterpret_cast<uintptr_t>(p));
  if (it == allocations_.end()) return CUDA_ERROR_INVALID_VALUE;
  const MemKind kind = it->second.kind;
  if (host ? kind != MemKind::HostPinned : !is_device_kind(kind)) return CUDA_ERROR_INVALID_VALUE;
  *freed = it->second;
  allocations_.erase(it);
  if (is_device_kind(kind)) {
    DeviceState& d = devices_[freed->device];
    d.memory_used -= std::min<uint64_t>(d.memory_used, freed->size);
    shared_.add_process_memory(d.node_index, -static_cast<int64_t>(freed->size));
  }
  return CUDA_SUCCESS;
}

CUresult Model::mem_free(void* p, bool host) {
  int64_t idle = 0, bytes_idle = 0;
  {
    std::unique_lock lock(mu_);
    Allocation a;
    if (!find_locked(p, 1, &a) || a.base != reinterpret_cast<uintptr_t>(p)) return CUDA_ERROR_INVALID_VALUE;
    resolved_.wait(lock, [&] {
      return std::all_of(devices_.begin(), devices_.end(), [](const DeviceState& d) { return d.unresolved.empty(); });
    });
    idle = device_idle_time(a.device);
    // Pinned memory may be any device's copy source or destination.
    bytes_idle = host ? max_idle_time() : idle;
  }
  // cudaFree / cudaFreeHost wait for the whole device to drain, as on real
  // hardware: the page tables cannot change under running work.
  wait_until(idle);
  HostWorker::instance().wait_bytes_through(bytes_idle);
  Allocation freed;
  {
    std::lock_guard lock(mu_);
    if (CUresult r = free_locked(p, host, &freed)) return r;
  }
  const double mib = static_cast<double>(freed.size) / kMiB;
  spend_host_time(us_to_ns(node_.costs.free + node_.costs.free_per_mib * mib));
  unmap_memory(freed);
  return CUDA_SUCCESS;
}

CUresult Model::mem_free_async(void* p, CUstream s, bool per_thread) {
  {
    std::lock_guard lock(mu_);
    CUstream_st* st = nullptr;
    if (CUresult r = resolve_stream(s, per_thread, &st)) return r;
    Allocation freed;
    if (CUresult r = free_locked(p, false, &freed)) return r;
    // The pages go when the stream reaches the free: copies queued before it
    // may still move bytes there.
    submit(*st, StreamOp{StreamOp::Kind::Task, {}, [freed] { unmap_memory(freed); }, nullptr, nullptr, now_ns()});
  }
  spend_host_time(us_to_ns(node_.costs.async_alloc));
  return CUDA_SUCCESS;
}

CUresult Model::host_register(void* p, size_t bytes, unsigned flags) {
  if (!p || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  int dev = 0;
  if (CUresult r = current_device(&dev)) return r;
  {
    std::lock_guard lock(mu_);
    const auto addr = reinterpret_cast<uintptr_t>(p);
    auto next = allocations_.lower_bound(addr);
    if (find_locked(p, 1, nullptr) || (next != allocations_.end() && next->first < addr + bytes))
      return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    allocations_[addr] = Allocation{addr, bytes, dev, MemKind::HostRegistered, flags, false};
  }
  spend_host_time(us_to_ns(node_.costs.host_register_per_mib * static_cast<double>(bytes) / kMiB));
  return CUDA_SUCCESS;
}

CUresult Model::host_unregister(void* p) {
  int64_t idle = 0;
  {
    std::lock_guard lock(mu_);
    auto it = allocations_.find(reinterpret_cast<uintptr_t>(p));
    if (it == allocations_.end() || it->second.kind != MemKind::HostRegistered)
      return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    allocations_.erase(it);
    idle = max_idle_time();
  }
  // The program may free the memory next: no queued copy may still write there.
  HostWorker::instance().wait_bytes_through(idle);
  return CUDA_SUCCESS;
}

CUresult Model::host_flags(void* p, unsigned* flags) {
  std::lock_guard lock(mu_);
  Allocation a;
  if (!flags || !find_locked(p, 1, &a) || !is_pinned_kind(a.kind)) return CUDA_ERROR_INVALID_VALUE;
  *flags = a.flags;
  return CUDA_SUCCESS;
}

CUresult Model::mem_info(size_t* free_bytes, size_t* total_bytes) {
  int dev = 0;
  if (CUresult r = current_device(&dev)) return r;
  // Free memory is device-wide: every process's allocations count.
  const DeviceDesc& d = desc(dev);
  uint64_t used = d.reserved_bytes;
  for (const ProcessUsage& p : shared_.processes(devices_[dev].node_index)) used += p.memory_bytes;
  if (total_bytes) *total_bytes = d.memory_bytes;
  if (free_bytes) *free_bytes = d.memory_bytes > used ? d.memory_bytes - used : 0;
  return CUDA_SUCCESS;
}

// Validates a copy and says what it costs, how long it holds the caller
// (`host_hold`: until the copy ends, or for its own duration while the CPU
// stages a pageable upload) and whether the caller moves the bytes itself
// (when it waits for them anyway, or the source is pageable memory the
// program may reuse as soon as the call returns).
CUresult Model::plan_copy(const CopyRequest& req, CUstream_st* st, Work* work, HostHold* hold) {
  const size_t bytes = req.width * req.height;
  const size_t dst_len = extent(req.width, req.height, req.dst_pitch);
  const size_t src_len = extent(req.width, req.height, req.src_pitch);
  Allocation dst, src;
  const bool dst_dev = find_locked(req.dst, dst_len, &dst) && is_device_kind(dst.kind);
  const bool src_dev = find_locked(req.src, src_len, &src) && is_device_kind(src.kind);
  const DeviceDesc& d = desc(st->device);
  Work w;
  w.bytes = bytes;
  bool staged = false, holds = false;  // device-to-device copies never hold the host
  if (req.dir == CopyDir::DeviceToDevice) {
    if (!dst_dev || !src_dev) return CUDA_ERROR_INVALID_VALUE;
    w.engine = Engine::Compute;
    w.activity = Activity::CopyD2D;
    w.bytes = 2 * bytes;  // read and written once each
    w.duration = static_cast<int64_t>(2.0 * bytes / d.dram_gbps);
    w.start_latency = us_to_ns(node_.costs.kernel_start_latency);
  } else {
    const bool to_device = req.dir == CopyDir::HostToDevice;
    if (to_device ? !dst_dev : !src_dev) return CUDA_ERROR_INVALID_VALUE;
    Allocation host;
    const bool pinned = find_locked(to_device ? req.src : req.dst, to_device ? src_len : dst_len, &host) &&
                        is_pinned_kind(host.kind);
    w.engine = to_device ? Engine::HostToDevice : Engine::DeviceToHost;
    w.activity = to_device ? Activity::CopyH2D : Activity::CopyD2H;
    const double gbps = pinned ? d.pinned_gbps : d.pageable_gbps;
    const double latency = pinned ? node_.costs.copy_latency_pinned : node_.costs.copy_latency_pageable;
    w.duration = us_to_ns(latency) + static_cast<int64_t>(static_cast<double>(bytes) / gbps);
    // When the caller gets control back, as on real hardware: the synchronous
    // API and device-to-host copies into pageable memory return once the
    // bytes have landed; a pageable "async" upload returns once the CPU has
    // staged it (its full duration, but not the wait for earlier work in the
    // stream); a pinned async copy returns at once.
    staged = req.async && to_device && !pinned;
    holds = !req.async || !pinned;
  }
  w.move = [req] { move_bytes(req); };
  *hold = staged ? HostHold::Staging : holds ? HostHold::UntilDone : HostHold::None;
  *work = std::move(w);
  return CUDA_SUCCESS;
}

CUresult Model::copy(const CopyRequest& req) {
  if (req.width * req.height == 0) return CUDA_SUCCESS;
  if (!req.dst || !req.src) return CUDA_ERROR_INVALID_VALUE;
  if (req.dir == CopyDir::HostToHost) {
    // Fully synchronous: waits for the stream, then the CPU copies.
    CUresult r = stream_synchronize(req.stream, req.per_thread);
    if (r == CUDA_SUCCESS) move_bytes(req);
    return r;
  }
  wait_for_queue_slot();
  std::shared_ptr<Scheduled> scheduled;
  HostHold hold = HostHold::None;
  int64_t duration = 0;
  const int64_t submitted = now_ns();
  {
    std::lock_guard lock(mu_);
    CUstream_st* st = nullptr;
    if (CUresult r = resolve_stream(req.stream, req.per_thread, &st)) return r;
    Work w;
    if (CUresult r = plan_copy(req, st, &w, &hold)) return r;
    duration = w.duration;
    scheduled = submit(*st, StreamOp{StreamOp::Kind::Work, std::move(w), {}, nullptr, nullptr, submitted});
  }
  // An asynchronous copy from pinned memory returns at once: the byte mover
  // copies when the stream reaches it, and a synchronize waits for it.
  if (hold == HostHold::None) return CUDA_SUCCESS;
  wait_until_scheduled(scheduled);
  HostWorker::instance().run_through(scheduled->slot.task);
  wait_until(hold == HostHold::Staging ? submitted + duration : scheduled->slot.end);
  return CUDA_SUCCESS;
}

CUresult Model::memset(CUdeviceptr dst, unsigned value, unsigned elem_size, size_t count, CUstream s,
                       bool per_thread, bool /*async*/) {
  void* p = reinterpret_cast<void*>(dst);
  const size_t bytes = count * elem_size;
  if (bytes == 0) return CUDA_SUCCESS;
  wait_for_queue_slot();
  {
    std::lock_guard lock(mu_);
    CUstream_st* st = nullptr;
    if (CUresult r = resolve_stream(s, per_thread, &st)) return r;
    Allocation a;
    if (!find_locked(p, bytes, &a) || !is_device_kind(a.kind)) return CUDA_ERROR_INVALID_VALUE;
    const int64_t submitted = now_ns();
    // Device memsets are asynchronous to the host, even the "synchronous" API.
    Work w{Engine::Compute, Activity::Memset,
           static_cast<int64_t>(static_cast<double>(bytes) / desc(st->device).dram_gbps),
           us_to_ns(node_.costs.kernel_start_latency), bytes, 1.0, nullptr};
    w.move = [p, value, elem_size, count] {
      if (elem_size == 1) std::memset(p, static_cast<int>(value & 0xff), count);
      if (elem_size == 2) fill<uint16_t>(p, static_cast<uint16_t>(value), count);
      if (elem_size == 4) fill<uint32_t>(p, value, count);
    };
    submit(*st, StreamOp{StreamOp::Kind::Work, std::move(w), {}, nullptr, nullptr, submitted});
  }
  return CUDA_SUCCESS;
}

CUresult Model::pointer_attribute(void* data, CUpointer_attribute attr, CUdeviceptr ptr) {
  if (!data) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(mu_);
  Allocation a;
  if (!find_locked(reinterpret_cast<void*>(ptr), 1, &a)) return CUDA_ERROR_INVALID_VALUE;
  switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      *static_cast<CUcontext*>(data) = &devices_[a.device].primary;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      *static_cast<unsigned*>(data) = is_device_kind(a.kind) ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
      *static_cast<CUdeviceptr*>(data) = ptr;  // one address space: device == host address
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      if (a.kind == MemKind::Device) return CUDA_ERROR_INVALID_VALUE;
      *static_cast<void**>(data) = reinterpret_cast<void*>(ptr);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
      *static_cast<bool*>(data) = a.kind == MemKind::Managed;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      *static_cast<int*>(data) = a.device;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

}  // namespace simgpu::drv
