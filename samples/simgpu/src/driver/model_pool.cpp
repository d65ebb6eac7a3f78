// Device model: stream-ordered memory pools (cudaMallocAsync, cudaMemPool*).
// A pool reserves device memory in blocks and hands them out; a freed block
// returns to it where its stream frees it.  An allocation served from a
// freed block costs the host `async_alloc`; one that needs new memory costs
// what cudaMalloc's mapping does (without its device synchronization).  As
// on a GPU, a pool keeps at most its release threshold (default 0) of free
// memory across a synchronize, and reuses a block freed on another stream
// once that free is done (opportunistic) or by making the allocating stream
// wait for it (internal dependencies).
#include <algorithm>

#include "../common/clock.hpp"
#include "model.hpp"

namespace simgpu::drv {
namespace {

constexpr size_t kBlockAlignment = 512;
constexpr size_t kMiB = 1 << 20;

// A free block worth handing out for `bytes`: big enough, and not so big that
// a small allocation would pin a large one.
bool fits(size_t block, size_t bytes) { return block >= bytes && block <= std::max(2 * bytes, bytes + 2 * kMiB); }

}  // namespace

CUmemoryPool Model::pool_of(int dev, bool default_pool) {
  DeviceState& d = devices_[dev];
  if (!d.default_pool) {
    d.default_pool = new CUmemPoolHandle_st;
    d.default_pool->device = dev;
    d.default_pool->is_default = true;
    d.current_pool = d.default_pool;
    pools_.insert(d.default_pool);
  }
  return default_pool ? d.default_pool : d.current_pool;
}

CUresult Model::pool_alloc(CUmemoryPool pool, size_t bytes, CUstream_st& s, void** out, int64_t* host_cost) {
  const size_t size = (bytes + kBlockAlignment - 1) / kBlockAlignment * kBlockAlignment;
  const int64_t now = now_ns();
  Allocation a{0, bytes, pool->device, MemKind::Device, 0, true};
  a.pool = pool;
  auto& blocks = pool->free_blocks;
  auto best = blocks.end();
  for (auto it = blocks.begin(); it != blocks.end(); ++it) {
    const bool done = it->freed_at->resolved && it->freed_at->time <= now;
    const bool usable = it->freed_on == &s || (done && pool->allow_opportunistic) || pool->allow_internal_dependencies;
    if (fits(it->size, size) && usable && (best == blocks.end() || it->size < best->size)) best = it;
  }
  if (best != blocks.end()) {
    if (best->freed_on != &s && !(best->freed_at->resolved && best->freed_at->time <= now))
      submit(s, StreamOp{StreamOp::Kind::Wait, {}, {}, best->freed_at, nullptr, now});  // internal dependency
    a.base = best->base;
    a.block_size = best->size;
    blocks.erase(best);
    *host_cost = us_to_ns(node_.costs.async_alloc);
  } else {
    size_t free_bytes = 0, total = 0;
    if (CUresult r = mem_info(&free_bytes, &total)) return r;
    if (size > free_bytes) trim_pool(pool, 0);
    if (CUresult r = mem_info(&free_bytes, &total)) return r;
    if (size > free_bytes) return CUDA_ERROR_OUT_OF_MEMORY;
    void* p = map_memory(size);
    if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
    a.base = reinterpret_cast<uintptr_t>(p);
    a.block_size = size;
    pool->reserved += size;
    pool->reserved_high = std::max(pool->reserved_high, pool->reserved);
    devices_[pool->device].memory_used += size;
    shared_.add_process_memory(devices_[pool->device].node_index, static_cast<int64_t>(size));
    *host_cost = us_to_ns(node_.costs.malloc + node_.costs.malloc_per_mib * static_cast<double>(size) / kMiB);
  }
  pool->used += a.block_size;
  pool->used_high = std::max(pool->used_high, pool->used);
  allocations_[a.base] = a;
  *out = reinterpret_cast<void*>(a.base);
  return CUDA_SUCCESS;
}

void Model::pool_free(const Allocation& a, const CUstream_st* s, MarkerRef freed_at) {
  CUmemoryPool pool = a.pool;
  pool->used -= std::min<uint64_t>(pool->used, a.block_size);
  pool->free_blocks.push_back({a.base, a.block_size, s, std::move(freed_at)});
  if (pool->destroyed) retire_pool(pool);
}

// A destroyed pool gives back what it can, and goes once nothing of it is
// left; until then it waits among the retired ones.
void Model::retire_pool(CUmemoryPool pool) {
  trim_pool(pool, 0);
  if (pool->used || !pool->free_blocks.empty()) {
    retired_pools_.insert(pool);
    return;
  }
  retired_pools_.erase(pool);
  delete pool;
}

// Gives back free blocks whose frees are done until at most `keep` bytes stay
// reserved; their pages go once no queued copy can touch them.
void Model::trim_pool(CUmemoryPool pool, uint64_t keep) {
  const int64_t now = now_ns();
  auto& blocks = pool->free_blocks;
  for (auto it = blocks.begin(); it != blocks.end() && pool->reserved > keep;) {
    if (!it->freed_at->resolved || it->freed_at->time > now) {
      ++it;
      continue;
    }
    Allocation a{it->base, it->size, pool->device, MemKind::Device, 0, true};
    pool->reserved -= std::min<uint64_t>(pool->reserved, it->size);
    DeviceState& d = devices_[pool->device];
    d.memory_used -= std::min<uint64_t>(d.memory_used, it->size);
    shared_.add_process_memory(d.node_index, -static_cast<int64_t>(it->size));
    HostWorker::instance().push_bytes(max_idle_time(), [a] { unmap_memory(a); });
    it = blocks.erase(it);
  }
}

void Model::release_pool_memory() {
  for (CUmemoryPool pool : pools_) trim_pool(pool, pool->release_threshold);
  for (CUmemoryPool pool : std::vector<CUmemoryPool>(retired_pools_.begin(), retired_pools_.end())) retire_pool(pool);
}

CUresult Model::mem_alloc_async(size_t bytes, CUstream s, bool per_thread, CUmemoryPool pool, void** out) {
  if (!out || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  int64_t host_cost = 0;
  {
    std::lock_guard lock(mu_);
    CUstream_st* st = nullptr;
    if (CUresult r = resolve_stream(s, per_thread, &st)) return r;
    if (pool && !pools_.count(pool)) return CUDA_ERROR_INVALID_VALUE;
    if (st->capture) return capture_alloc(*st, bytes, out);
    if (CUresult r = pool_alloc(pool ? pool : pool_of(st->device, false), bytes, *st, out, &host_cost)) return r;
  }
  spend_host_time(host_cost);
  return CUDA_SUCCESS;
}

CUresult Model::pool_create(const CUmemPoolProps* props, CUmemoryPool* out) {
  if (!props || !out || props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
      props->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
    return CUDA_ERROR_INVALID_VALUE;
  if (props->location.id < 0 || props->location.id >= device_count()) return CUDA_ERROR_INVALID_DEVICE;
  if (props->handleTypes != CU_MEM_HANDLE_TYPE_NONE) return CUDA_ERROR_NOT_SUPPORTED;  // no IPC in simgpu
  std::lock_guard lock(mu_);
  auto* pool = new CUmemPoolHandle_st;
  pool->device = props->location.id;
  pools_.insert(pool);
  *out = pool;
  return CUDA_SUCCESS;
}

CUresult Model::pool_destroy(CUmemoryPool pool) {
  std::lock_guard lock(mu_);
  if (!pools_.count(pool) || pool->is_default) return CUDA_ERROR_INVALID_VALUE;
  // Its free memory goes now, what is still allocated when it is freed; the
  // handle stays for those allocations to find.
  pools_.erase(pool);
  pool->destroyed = true;
  DeviceState& d = devices_[pool->device];
  if (d.current_pool == pool) d.current_pool = d.default_pool;
  retire_pool(pool);
  return CUDA_SUCCESS;
}

CUresult Model::device_pool(int dev, bool default_pool, CUmemoryPool* out) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  if (dev < 0 || dev >= device_count()) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard lock(mu_);
  *out = pool_of(dev, default_pool);
  return CUDA_SUCCESS;
}

CUresult Model::set_device_pool(int dev, CUmemoryPool pool) {
  if (dev < 0 || dev >= device_count()) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard lock(mu_);
  if (!pools_.count(pool) || pool->device != dev) return CUDA_ERROR_INVALID_VALUE;
  pool_of(dev, true);
  devices_[dev].current_pool = pool;
  return CUDA_SUCCESS;
}

CUresult Model::pool_attribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value, bool set) {
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(mu_);
  if (!pools_.count(pool)) return CUDA_ERROR_INVALID_VALUE;
  int* flag = attr == CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES     ? &pool->follow_event_dependencies
              : attr == CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC         ? &pool->allow_opportunistic
              : attr == CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES ? &pool->allow_internal_dependencies
                                                                          : nullptr;
  if (flag) {
    if (set) *flag = *static_cast<int*>(value) != 0;
    else *static_cast<int*>(value) = *flag;
    return CUDA_SUCCESS;
  }
  auto* bytes = static_cast<cuuint64_t*>(value);
  uint64_t* field = attr == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD     ? &pool->release_threshold
                    : attr == CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT ? &pool->reserved
                    : attr == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH    ? &pool->reserved_high
                    : attr == CU_MEMPOOL_ATTR_USED_MEM_CURRENT     ? &pool->used
                    : attr == CU_MEMPOOL_ATTR_USED_MEM_HIGH        ? &pool->used_high
                                                                   : nullptr;
  if (!field) return CUDA_ERROR_INVALID_VALUE;
  if (!set) {
    *bytes = *field;
    return CUDA_SUCCESS;
  }
  // Settable: the threshold, and the high-water marks back to the current value (with 0).
  if (attr == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) *field = *bytes;
  else if (attr == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH && *bytes == 0) *field = pool->reserved;
  else if (attr == CU_MEMPOOL_ATTR_USED_MEM_HIGH && *bytes == 0) *field = pool->used;
  else return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

CUresult Model::pool_trim(CUmemoryPool pool, size_t keep) {
  std::lock_guard lock(mu_);
  if (!pools_.count(pool)) return CUDA_ERROR_INVALID_VALUE;
  trim_pool(pool, keep);
  return CUDA_SUCCESS;
}

CUresult Model::pool_set_access(CUmemoryPool pool, const CUmemAccessDesc* descs, size_t count) {
  if (count && !descs) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(mu_);
  if (!pools_.count(pool)) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i) {
    const CUmemAccessDesc& d = descs[i];
    if (d.location.type != CU_MEM_LOCATION_TYPE_DEVICE || d.location.id < 0 || d.location.id >= device_count())
      return CUDA_ERROR_INVALID_DEVICE;
    if (d.location.id == pool->device) {
      if (d.flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE) return CUDA_ERROR_INVALID_VALUE;  // its own device always
      continue;
    }
    if (!peer_capable(pool->device, d.location.id)) return CUDA_ERROR_INVALID_DEVICE;
  }
  for (size_t i = 0; i < count; ++i)
    if (descs[i].location.id != pool->device) pool->peer_access[descs[i].location.id] = descs[i].flags;
  return CUDA_SUCCESS;
}

CUresult Model::pool_get_access(CUmemoryPool pool, const CUmemLocation* location, CUmemAccess_flags* flags) {
  if (!location || !flags || location->type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(mu_);
  if (!pools_.count(pool)) return CUDA_ERROR_INVALID_VALUE;
  auto it = pool->peer_access.find(location->id);
  *flags = location->id == pool->device ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE
           : it == pool->peer_access.end() ? CU_MEM_ACCESS_FLAGS_PROT_NONE
                                           : it->second;
  return CUDA_SUCCESS;
}

}  // namespace simgpu::drv
