// Device model: managed (unified) memory.  It is host memory like every
// other allocation here, so the host reads and writes it directly and kernels
// (which compute nothing) never fault on it; what the model adds is where
// each 2 MiB chunk lives.  A prefetch moves the chunks not yet at its target
// over the stream device's PCIe link (a modeled copy, H2D or D2H), and
// advice and attachment are recorded and reported back.
#include <algorithm>

#include "../common/clock.hpp"
#include "model.hpp"

namespace simgpu::drv {

// The managed allocation holding all of [p, p + count).
CUresult Model::managed_range(CUdeviceptr p, size_t count, Allocation* out) const {
  if (count == 0 || !find_locked(reinterpret_cast<void*>(p), count, out) || !out->managed)
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

// A location as the model's device number: -1 (CU_DEVICE_CPU) for the host.
CUresult Model::location_device(const CUmemLocation& l, int* dev) const {
  switch (l.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
      if (l.id < 0 || l.id >= device_count()) return CUDA_ERROR_INVALID_DEVICE;
      *dev = l.id;
      return CUDA_SUCCESS;
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
      *dev = CU_DEVICE_CPU;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult Model::prefetch(CUdeviceptr p, size_t count, CUmemLocation to, unsigned flags, CUstream s,
                         bool per_thread) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  wait_for_queue_slot();
  std::lock_guard lock(mu_);
  CUstream_st* st = nullptr;
  if (CUresult r = resolve_stream(s, per_thread, &st)) return r;
  Allocation a;
  int target = 0;
  if (CUresult r = managed_range(p, count, &a)) return r;
  if (CUresult r = location_device(to, &target)) return r;
  if (st->capture) return check_not_capturing(*st);  // no graph node prefetches
  // The chunks of the range not at the target move; the model knows their
  // new home at once, as later work on the stream will find them there.
  const size_t first = static_cast<size_t>(p) - a.base, last = first + count;
  uint64_t moved = 0;
  for (size_t c = first / ManagedState::kChunk; c * ManagedState::kChunk < last; ++c) {
    const size_t lo = std::max(first, c * ManagedState::kChunk), hi = std::min(last, (c + 1) * ManagedState::kChunk);
    if (a.managed->where[c] != target) moved += hi - lo;
    a.managed->where[c] = target;
  }
  a.managed->last_prefetch = target;
  if (moved == 0) return CUDA_SUCCESS;
  const bool to_device = target != CU_DEVICE_CPU;
  Work w;
  w.engine = to_device ? Engine::HostToDevice : Engine::DeviceToHost;
  w.activity = to_device ? Activity::CopyH2D : Activity::CopyD2H;
  w.bytes = moved;
  w.duration = us_to_ns(node_.costs.copy_latency_pinned) +
               static_cast<int64_t>(static_cast<double>(moved) / desc(st->device).pinned_gbps);
  submit(*st, StreamOp{StreamOp::Kind::Work, std::move(w), {}, nullptr, nullptr, now_ns()});
  return CUDA_SUCCESS;
}

CUresult Model::advise(CUdeviceptr p, size_t count, CUmem_advise advice, CUmemLocation where) {
  std::lock_guard lock(mu_);
  Allocation a;
  if (CUresult r = managed_range(p, count, &a)) return r;
  ManagedState& m = *a.managed;
  int dev = CU_DEVICE_INVALID;
  const bool needs_location = advice == CU_MEM_ADVISE_SET_PREFERRED_LOCATION ||
                              advice == CU_MEM_ADVISE_SET_ACCESSED_BY || advice == CU_MEM_ADVISE_UNSET_ACCESSED_BY;
  if (needs_location)
    if (CUresult r = location_device(where, &dev)) return r;
  switch (advice) {
    case CU_MEM_ADVISE_SET_READ_MOSTLY: m.read_mostly = true; return CUDA_SUCCESS;
    case CU_MEM_ADVISE_UNSET_READ_MOSTLY: m.read_mostly = false; return CUDA_SUCCESS;
    case CU_MEM_ADVISE_SET_PREFERRED_LOCATION: m.preferred = dev; return CUDA_SUCCESS;
    case CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION: m.preferred = CU_DEVICE_INVALID; return CUDA_SUCCESS;
    case CU_MEM_ADVISE_SET_ACCESSED_BY: m.accessed_by.insert(dev); return CUDA_SUCCESS;
    case CU_MEM_ADVISE_UNSET_ACCESSED_BY: m.accessed_by.erase(dev); return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult Model::range_attribute(void* data, size_t size, CUmem_range_attribute attr, CUdeviceptr p, size_t count) {
  if (!data || size < sizeof(int) || size % sizeof(int)) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(mu_);
  Allocation a;
  if (CUresult r = managed_range(p, count, &a)) return r;
  const ManagedState& m = *a.managed;
  auto* out = static_cast<int*>(data);
  switch (attr) {
    case CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY: *out = m.read_mostly; return CUDA_SUCCESS;
    case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION: *out = m.preferred; return CUDA_SUCCESS;
    case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION: *out = m.last_prefetch; return CUDA_SUCCESS;
    case CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY: {
      // The devices advised, then CU_DEVICE_INVALID for the rest of the array.
      const size_t slots = size / sizeof(int);
      std::fill(out, out + slots, CU_DEVICE_INVALID);
      std::copy_n(m.accessed_by.begin(), std::min(slots, m.accessed_by.size()), out);
      return CUDA_SUCCESS;
    }
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult Model::attach_memory(CUstream s, bool per_thread, CUdeviceptr p, size_t length, unsigned flags) {
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST && flags != CU_MEM_ATTACH_SINGLE)
    return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(mu_);
  CUstream_st* st = nullptr;
  if (CUresult r = resolve_stream(s, per_thread, &st)) return r;
  Allocation a;
  if (!find_locked(reinterpret_cast<void*>(p), std::max<size_t>(length, 1), &a) || !a.managed ||
      (length && length != a.size) || a.base != static_cast<uintptr_t>(p))
    return CUDA_ERROR_INVALID_VALUE;  // the whole allocation, from its start
  if (flags == CU_MEM_ATTACH_SINGLE && st->legacy) return CUDA_ERROR_INVALID_VALUE;
  // Visibility is all simgpu's one address space has: nothing to move.
  a.managed->attach = flags;
  return CUDA_SUCCESS;
}

}  // namespace simgpu::drv
