// CUDA driver allocation: device, pinned host, registered, managed, pooled
// and pitched memory, and their frees.
#include <cuda.h>

#include "hooks/call_info.h"
#include "hooks/hook_support.h"

namespace {

using gpuscope::fb::MemoryKind;
using gpuscope::hooks::AllocCall;
using gpuscope::hooks::allocation;
using gpuscope::hooks::registration;
using gpuscope::hooks::release;
using gpuscope::hooks::unregistration;
constexpr uint8_t D = gpuscope::hooks::kDriverApi;
constexpr uint8_t DP = gpuscope::hooks::kDriverApi | gpuscope::hooks::kPerThreadStream;

const void* ptr(CUdeviceptr p) { return reinterpret_cast<const void*>(static_cast<uintptr_t>(p)); }

AllocCall device_alloc(CUdeviceptr* out, size_t n, MemoryKind kind, CUstream s = nullptr, bool async = false) {
  AllocCall c = allocation(nullptr, n, kind, s, async);
  c.out_address = reinterpret_cast<const uint64_t*>(out);
  return c;
}

AllocCall pitched(CUdeviceptr* out, size_t* pitch, size_t rows) {
  AllocCall c = device_alloc(out, 0, MemoryKind::Device);
  c.out_pitch = pitch;
  c.rows = rows;
  return c;
}

}  // namespace

#define GPUSCOPE_DRIVER_ALLOC(X)                                                                                   \
  X(CUresult, cuMemAlloc_v2, D, (CUdeviceptr* p, size_t n), (p, n), (device_alloc(p, n, MemoryKind::Device)))     \
  X(CUresult, cuMemFree_v2, D, (CUdeviceptr p), (p), (release(ptr(p), MemoryKind::Device)))                       \
  X(CUresult, cuMemAllocHost_v2, D, (void** p, size_t n), (p, n), (allocation(p, n, MemoryKind::Pinned)))         \
  X(CUresult, cuMemFreeHost, D, (void* p), (p), (release(p, MemoryKind::Pinned)))                                 \
  X(CUresult, cuMemHostAlloc, D, (void** p, size_t n, unsigned f), (p, n, f), (allocation(p, n, MemoryKind::Pinned))) \
  X(CUresult, cuMemHostRegister_v2, D, (void* p, size_t n, unsigned f), (p, n, f), (registration(p, n)))          \
  X(CUresult, cuMemHostUnregister, D, (void* p), (p), (unregistration(p)))                                        \
  X(CUresult, cuMemAllocManaged, D, (CUdeviceptr* p, size_t n, unsigned f), (p, n, f),                            \
    (device_alloc(p, n, MemoryKind::Managed)))                                                                    \
  X(CUresult, cuMemAllocPitch_v2, D, (CUdeviceptr* p, size_t* pitch, size_t w, size_t h, unsigned e),             \
    (p, pitch, w, h, e), (pitched(p, pitch, h)))                                                                  \
  X(CUresult, cuMemAllocAsync, D, (CUdeviceptr* p, size_t n, CUstream s), (p, n, s),                              \
    (device_alloc(p, n, MemoryKind::Device, s, true)))                                                            \
  X(CUresult, cuMemAllocAsync_ptsz, DP, (CUdeviceptr* p, size_t n, CUstream s), (p, n, s),                        \
    (device_alloc(p, n, MemoryKind::Device, s, true)))                                                            \
  X(CUresult, cuMemAllocFromPoolAsync, D, (CUdeviceptr* p, size_t n, CUmemoryPool pool, CUstream s), (p, n, pool, s), \
    (device_alloc(p, n, MemoryKind::Pool, s, true)))                                                              \
  X(CUresult, cuMemAllocFromPoolAsync_ptsz, DP, (CUdeviceptr* p, size_t n, CUmemoryPool pool, CUstream s),        \
    (p, n, pool, s), (device_alloc(p, n, MemoryKind::Pool, s, true)))                                             \
  X(CUresult, cuMemFreeAsync, D, (CUdeviceptr p, CUstream s), (p, s), (release(ptr(p), MemoryKind::Device, s, true))) \
  X(CUresult, cuMemFreeAsync_ptsz, DP, (CUdeviceptr p, CUstream s), (p, s),                                       \
    (release(ptr(p), MemoryKind::Device, s, true)))

GPUSCOPE_DEFINE_FAMILY(GPUSCOPE_DRIVER_ALLOC, driver_alloc_hooks)
