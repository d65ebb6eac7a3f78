// Device model: the virtual memory management API (cuMemAddressReserve,
// cuMemCreate, cuMemMap, cuMemSetAccess, cuMemUnmap, cuMemRelease,
// cuMemAddressFree), as PyTorch's expandable segments and vLLM's sleep mode
// use it. A reservation is PROT_NONE address space; a physical allocation is
// a memfd, charged to the device's memory when created; a mapping places
// the memfd in a reservation and is, while it lasts, a device allocation
// like one from cuMemAlloc (copies and kernels may name it).
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>

#include "../common/clock.hpp"
#include "host_worker.hpp"
#include "model.hpp"

namespace simgpu::drv {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

bool multiple_of_granularity(size_t n) { return n % Model::vmm_granularity() == 0; }

void* reserve_address_space(size_t bytes, void* at, bool fixed) {
  const int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | (fixed ? MAP_FIXED : 0);
  void* p = mmap(at, bytes, PROT_NONE, flags, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

}  // namespace

CUresult Model::vmm_check_prop(const CUmemAllocationProp* prop, int* dev) const {
  if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED) return CUDA_ERROR_INVALID_VALUE;
  return location_device(prop->location, dev);
}

CUresult Model::vmm_create(size_t bytes, const CUmemAllocationProp& prop, CUmemGenericAllocationHandle* out) {
  int dev = 0;
  if (CUresult r = vmm_check_prop(&prop, &dev)) return r;
  if (!out || bytes == 0 || !multiple_of_granularity(bytes)) return CUDA_ERROR_INVALID_VALUE;
  const bool on_device = dev != CU_DEVICE_CPU;
  if (on_device) {  // the allocation's device, current context or not: the API needs none
    size_t free_bytes = 0, total = 0;
    device_mem_info(dev, &free_bytes, &total);
    if (bytes > free_bytes) return CUDA_ERROR_OUT_OF_MEMORY;
  }
  const int64_t start = now_ns();
  const int fd = memfd_create("simgpu-vmm", MFD_CLOEXEC);
  if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    close(fd);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  // Creating physical memory costs what a cuMemAlloc of its size does.
  wait_until(start + us_to_ns(node_.costs.malloc + node_.costs.malloc_per_mib * static_cast<double>(bytes) / kMiB));
  std::lock_guard lock(mu_);
  const CUmemGenericAllocationHandle h = next_vmm_handle_++;
  vmm_allocations_[h] = VmmAllocation{fd, bytes, dev, prop, 0, false};
  if (on_device) {
    devices_[dev].memory_used += bytes;
    shared_.add_process_memory(devices_[dev].node_index, static_cast<int64_t>(bytes));
  }
  *out = h;
  return CUDA_SUCCESS;
}

// With mu_ held: the memory goes once the handle is released and unmapped.
void Model::vmm_drop_if_unused(CUmemGenericAllocationHandle h) {
  auto it = vmm_allocations_.find(h);
  if (it == vmm_allocations_.end() || !it->second.released || it->second.mappings > 0) return;
  const VmmAllocation& v = it->second;
  if (v.device != CU_DEVICE_CPU) {
    DeviceState& d = devices_[v.device];
    d.memory_used -= std::min<uint64_t>(d.memory_used, v.size);
    shared_.add_process_memory(d.node_index, -static_cast<int64_t>(v.size));
  }
  close(v.fd);
  vmm_allocations_.erase(it);
}

CUresult Model::vmm_release(CUmemGenericAllocationHandle h) {
  {
    std::lock_guard lock(mu_);
    auto it = vmm_allocations_.find(h);
    if (it == vmm_allocations_.end() || it->second.released) return CUDA_ERROR_INVALID_VALUE;
    it->second.released = true;
    vmm_drop_if_unused(h);
  }
  spend_host_time(us_to_ns(node_.costs.free));
  return CUDA_SUCCESS;
}

CUresult Model::vmm_properties(CUmemGenericAllocationHandle h, CUmemAllocationProp* out) {
  std::lock_guard lock(mu_);
  auto it = vmm_allocations_.find(h);
  if (!out || it == vmm_allocations_.end() || it->second.released) return CUDA_ERROR_INVALID_VALUE;
  *out = it->second.prop;
  return CUDA_SUCCESS;
}

// Address space only: nothing is charged to the device.
CUresult Model::vmm_reserve(size_t bytes, size_t alignment, CUdeviceptr hint, CUdeviceptr* out) {
  if (alignment == 0) alignment = vmm_granularity();
  if (!out || bytes == 0 || !multiple_of_granularity(bytes) || (alignment & (alignment - 1)) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  // Over-reserve by the alignment, then give back what lies outside it.
  auto* raw = static_cast<std::byte*>(reserve_address_space(bytes + alignment, reinterpret_cast<void*>(hint), false));
  if (!raw) return CUDA_ERROR_OUT_OF_MEMORY;
  const auto base = (reinterpret_cast<uintptr_t>(raw) + alignment - 1) & ~(alignment - 1);
  const size_t before = base - reinterpret_cast<uintptr_t>(raw), after = alignment - before;
  if (before) munmap(raw, before);
  if (after) munmap(reinterpret_cast<void*>(base + bytes), after);
  std::lock_guard lock(mu_);
  reservations_[base] = bytes;
  *out = base;
  return CUDA_SUCCESS;
}

bool Model::vmm_range_reserved(uintptr_t p, size_t bytes) const {
  auto it = reservations_.upper_bound(p);
  if (it == reservations_.begin()) return false;
  --it;
  return p >= it->first && p + bytes <= it->first + it->second;
}

CUresult Model::vmm_free_address(CUdeviceptr p, size_t bytes) {
  std::lock_guard lock(mu_);
  auto it = reservations_.find(p);
  if (it == reservations_.end() || it->second != bytes) return CUDA_ERROR_INVALID_VALUE;
  auto mapped = allocations_.lower_bound(p);
  if (mapped != allocations_.end() && mapped->first < p + bytes) return CUDA_ERROR_INVALID_VALUE;  // unmap first
  munmap(reinterpret_cast<void*>(p), bytes);
  reservations_.erase(it);
  return CUDA_SUCCESS;
}

CUresult Model::vmm_map(CUdeviceptr p, size_t bytes, size_t offset, CUmemGenericAllocationHandle h) {
  std::lock_guard lock(mu_);
  auto it = vmm_allocations_.find(h);
  if (it == vmm_allocations_.end() || it->second.released) return CUDA_ERROR_INVALID_HANDLE;
  VmmAllocation& v = it->second;
  if (bytes == 0 || !multiple_of_granularity(bytes) || !multiple_of_granularity(offset) || offset + bytes > v.size ||
      !vmm_range_reserved(p, bytes))
    return CUDA_ERROR_INVALID_VALUE;
  auto next = allocations_.lower_bound(p);
  if (find_locked(reinterpret_cast<void*>(p), 1, nullptr) || (next != allocations_.end() && next->first < p + bytes))
    return CUDA_ERROR_INVALID_VALUE;  // already mapped
  void* at = mmap(reinterpret_cast<void*>(p), bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, v.fd,
                  static_cast<off_t>(offset));
  if (at == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  const bool host = v.device == CU_DEVICE_CPU;
  Allocation a{p, bytes, host ? 0 : v.device, host ? MemKind::HostPinned : MemKind::Device, 0, false};
  a.vmm = h;
  allocations_[p] = a;
  ++v.mappings;
  return CUDA_SUCCESS;
}

// The range must be whole mappings, back to back. simgpu lets queued copies
// land first, so that a program that unmaps under them (an error on a real
// GPU) does not crash the model's worker.
CUresult Model::vmm_unmap(CUdeviceptr p, size_t bytes) {
  int64_t idle = 0;
  {
    std::lock_guard lock(mu_);
    uintptr_t at = p;
    for (auto it = allocations_.find(p); at < p + bytes; it = allocations_.find(at)) {
      if (it == allocations_.end() || !it->second.vmm || at + it->second.size > p + bytes)
        return CUDA_ERROR_INVALID_VALUE;
      at += it->second.size;
      idle = std::max(idle, device_idle_time(it->second.device));
    }
  }
  HostWorker::instance().wait_bytes_through(idle);
  {
    std::lock_guard lock(mu_);
    for (auto it = allocations_.lower_bound(p); it != allocations_.end() && it->first < p + bytes;) {
      const CUmemGenericAllocationHandle h = it->second.vmm;
      it = allocations_.erase(it);
      auto v = vmm_allocations_.find(h);
      if (v != vmm_allocations_.end()) --v->second.mappings;
      vmm_drop_if_unused(h);
    }
    reserve_address_space(bytes, reinterpret_cast<void*>(p), true);  // back to a reservation
  }
  // Page-table work, priced as freeing that much memory is.
  spend_host_time(us_to_ns(node_.costs.free_per_mib * static_cast<double>(bytes) / kMiB));
  return CUDA_SUCCESS;
}

CUresult Model::vmm_set_access(CUdeviceptr p, size_t bytes, const CUmemAccessDesc* desc, size_t count) {
  if (!desc || count == 0 || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = check_access(p, bytes, desc, count)) return r;
  // Page-table work, priced as allocating that much memory is.
  spend_host_time(us_to_ns(node_.costs.malloc_per_mib * static_cast<double>(bytes) / kMiB));
  return CUDA_SUCCESS;
}

CUresult Model::check_access(CUdeviceptr p, size_t bytes, const CUmemAccessDesc* desc, size_t count) {
  std::lock_guard lock(mu_);
  for (size_t i = 0; i < count; ++i) {
    int dev = 0;
    if (CUresult r = location_device(desc[i].location, &dev)) return r;
    if (desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE && desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
        desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
      return CUDA_ERROR_INVALID_VALUE;
  }
  for (uintptr_t at = p; at < p + bytes;) {  // every byte must be mapped
    Allocation a;
    if (!find_locked(reinterpret_cast<void*>(at), 1, &a) || !a.vmm) return CUDA_ERROR_INVALID_VALUE;
    at = a.base + a.size;
  }
  return CUDA_SUCCESS;
}

}  // namespace simgpu::drv
