// Device model: allocations.  Device memory is anonymous host memory
// (MAP_NORESERVE, so a 100 GiB cudaMalloc costs nothing until touched); the
// model charges host time for allocation.
#include <sys/mman.h>

#include <algorithm>
#include <cstring>

#include "../common/clock.hpp"
#include "activity.hpp"
#include "model.hpp"

namespace simgpu::drv {
namespace {

constexpr size_t kPage = 4096;
constexpr double kMiB = 1024.0 * 1024.0;

}  // namespace

// Pinned host memory is resident, as page-locking makes it: populate it now
// so its first copy does not pay page faults the model does not charge.
void* map_memory(size_t bytes, bool populate) {
  const size_t len = (bytes + kPage - 1) / kPage * kPage;
  const int flags = MAP_PRIVATE | MAP_ANONYMOUS | (populate ? MAP_POPULATE : MAP_NORESERVE);
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, flags, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

void unmap_memory(const Allocation& a) {
  const size_t bytes = a.pool ? a.block_size : a.size;
  if (a.mapped) munmap(reinterpret_cast<void*>(a.base), (bytes + kPage - 1) / kPage * kPage);
}

namespace {


// MEMORY2's kind for memory cuMemAlloc* made.
uint8_t cupti_memory_kind(MemKind kind) {
  switch (kind) {
    case MemKind::Device: return CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    case MemKind::Managed: return CUPTI_ACTIVITY_MEMORY_KIND_MANAGED;
    case MemKind::HostPinned:
    case MemKind::HostRegistered: return CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
    case MemKind::Array: return CUPTI_ACTIVITY_MEMORY_KIND_ARRAY;
  }
  return CUPTI_ACTIVITY_MEMORY_KIND_UNKNOWN;
}

int64_t alloc_cost(const HostCosts& c, MemKind kind, size_t bytes) {
  const double mib = static_cast<double>(bytes) / kMiB;
  if (kind == MemKind::HostPinned) return us_to_ns(c.host_alloc + c.host_alloc_per_mib * mib);
  return us_to_ns(c.malloc + c.malloc_per_mib * mib);
}

// Whether a free call of this sort may free memory of this kind.
bool frees(FreeOf what, MemKind kind) {
  switch (what) {
    case FreeOf::Device: return kind == MemKind::Device || kind == MemKind::Managed;
    case FreeOf::Host: return kind == MemKind::HostPinned;
    case FreeOf::Array: return kind == MemKind::Array;
  }
  return false;
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
  Allocation a = it->second;
  if (addr >= a.base + a.size) return false;
  // Mappings back to back in one reservation are one range to the device,
  // as PyTorch's expandable segments need: a tensor may span several.
  for (auto next = std::next(it); a.vmm && addr + bytes > a.base + a.size && next != allocations_.end() &&
                                  next->second.vmm && next->first == a.base + a.size;
       ++next)
    a.size += next->second.size;
  if (addr + bytes > a.base + a.size) return false;
  if (out) *out = a;
  return true;
}

CUresult Model::mem_alloc(size_t bytes, MemKind kind, unsigned flags, void** out) {
  if (!out || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  int dev = 0;
  if (CUresult r = current_device(&dev)) return r;
  {
    std::lock_guard lock(mu_);
    if (CUresult r = check_unsafe_call()) return r;
  }
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
  {
    std::lock_guard lock(mu_);
    Allocation a{reinterpret_cast<uintptr_t>(p), bytes, dev, kind, flags, true};
    if (kind == MemKind::Managed) {
      // Assumed on the host at first: the program usually fills it there.
      a.managed = std::make_shared<ManagedState>();
      a.managed->where.assign((bytes + ManagedState::kChunk - 1) / ManagedState::kChunk, CU_DEVICE_CPU);
      a.managed->attach = flags;
    }
    allocations_[a.base] = a;
    if (is_device_kind(kind)) {
      devices_[dev].memory_used += bytes;
      shared_.add_process_memory(devices_[dev].node_index, static_cast<int64_t>(bytes));
    }
  }
  activity_memory(DeviceRecord::Alloc, dev, reinterpret_cast<uintptr_t>(p), bytes, cupti_memory_kind(kind));
  *out = p;
  return CUDA_SUCCESS;
}

CUresult Model::reserve_graph_memory(size_t bytes, int dev, void** out) {
  size_t free_bytes = 0, total = 0;
  if (CUresult r = mem_info(&free_bytes, &total)) return r;
  if (bytes > free_bytes) return CUDA_ERROR_OUT_OF_MEMORY;
  void* p = map_memory(bytes);
  if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
  Allocation a{reinterpret_cast<uintptr_t>(p), bytes, dev, MemKind::Device, 0, true};
  a.graph = true;
  allocations_[a.base] = a;
  uint64_t in_use = 0;
  for (const auto& [base, other] : allocations_)
    if (other.graph && other.device == dev) in_use += other.size;
  graph_memory_high_[dev] = std::max(graph_memory_high_[dev], in_use);
  devices_[dev].memory_used += bytes;
  shared_.add_process_memory(devices_[dev].node_index, static_cast<int64_t>(bytes));
  *out = p;
  return CUDA_SUCCESS;
}

CUresult Model::mem_alloc_pitch(size_t width, size_t height, void** out, size_t* pitch) {
  constexpr size_t kPitchAlignment = 512;
  if (!out || !pitch || width == 0 || height == 0) return CUDA_ERROR_INVALID_VALUE;
  const size_t padded = (width + kPitchAlignment - 1) / kPitchAlignment * kPitchAlignment;
  if (CUresult r = mem_alloc(padded * height, MemKind::Device, 0, out)) return r;
  *pitch = padded;
  return CUDA_SUCCESS;
}

CUresult Model::free_locked(void* p, FreeOf what, Allocation* freed) {
  const bool host = what == FreeOf::Host;
  auto it = allocations_.find(reinterpret_cast<uintptr_t>(p));
  if (it == allocations_.end() || it->second.vmm) return CUDA_ERROR_INVALID_VALUE;  // a mapping: cuMemUnmap
  // A graph's allocation may be freed outside the graph; its pages stay
  // with the graph, which allocates them again at its next launch.
  if (it->second.graph) {
    if (host) return CUDA_ERROR_INVALID_VALUE;
    *freed = it->second;
    return CUDA_SUCCESS;
  }
  const MemKind kind = it->second.kind;
  if (!frees(what, kind)) return CUDA_ERROR_INVALID_VALUE;
  *freed = it->second;
  allocations_.erase(it);
  if (freed->pool) return CUDA_SUCCESS;  // the block stays reserved in its pool
  if (is_device_kind(kind)) {
    DeviceState& d = devices_[freed->device];
    d.memory_used -= std::min<uint64_t>(d.memory_used, freed->size);
    shared_.add_process_memory(d.node_index, -static_cast<int64_t>(freed->size));
  }
  return CUDA_SUCCESS;
}

CUresult Model::mem_free(void* p, FreeOf what) {
  const bool host = what == FreeOf::Host;
  int64_t idle = 0, bytes_idle = 0;
  {
    std::unique_lock lock(mu_);
    if (CUresult r = check_unsafe_call()) return r;
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
    if (CUresult r = free_locked(p, what, &freed)) return r;
    // Memory from a pool goes back to it, idle now that the device is.
    if (freed.pool) pool_free(freed, nullptr, std::make_shared<Marker>(Marker{true, idle}));
  }
  const double mib = static_cast<double>(freed.size) / kMiB;
  spend_host_time(us_to_ns(node_.costs.free + node_.costs.free_per_mib * mib));
  if (!freed.graph && !freed.pool) {
    unmap_memory(freed);
    activity_memory(DeviceRecord::Free, freed.device, freed.base, freed.size, cupti_memory_kind(freed.kind));
  }
  return CUDA_SUCCESS;
}

CUresult Model::mem_free_async(void* p, CUstream s, bool per_thread) {
  {
    std::lock_guard lock(mu_);
    CUstream_st* st = nullptr;
    if (CUresult r = resolve_stream(s, per_thread, &st)) return r;
    Allocation freed;
    if (st->capture) return capture_free(*st, p);
    if (CUresult r = free_locked(p, FreeOf::Device, &freed)) return r;
    if (freed.pool) {
      // Back to the pool where the stream reaches the free: later work on
      // this stream may reuse it at once, other streams once it is done.
      auto freed_at = std::make_shared<Marker>();
      submit(*st, StreamOp{StreamOp::Kind::Record, {}, {}, freed_at, nullptr, now_ns()});
      pool_free(freed, st, freed_at);
    } else if (!freed.graph) {
      // The pages go when the stream reaches the free: copies queued before
      // it may still move bytes there.
      submit(*st, StreamOp{StreamOp::Kind::Task, {}, [freed] { unmap_memory(freed); }, nullptr, nullptr, now_ns()});
    }
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
    if (CUresult r = check_unsafe_call()) return r;
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
  return device_mem_info(dev, free_bytes, total_bytes);
}

CUresult Model::device_mem_info(int dev, size_t* free_bytes, size_t* total_bytes) const {
  // Free memory is device-wide: every process's allocations count.
  const DeviceDesc& d = desc(dev);
  uint64_t used = d.reserved_bytes;
  for (const ProcessUsage& p : shared_.processes(devices_[dev].node_index)) used += p.memory_bytes;
  if (total_bytes) *total_bytes = d.memory_bytes;
  if (free_bytes) *free_bytes = d.memory_bytes > used ? d.memory_bytes - used : 0;
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
