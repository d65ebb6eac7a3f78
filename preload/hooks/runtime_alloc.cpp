// CUDA runtime allocation: device, pinned host, registered, managed,
// stream-ordered (pool) and pitched/3D/array allocations, and their frees.
// Each one also keeps the memory registry current, which is how copies know
// whether their host side is pinned.
#include <cuda_runtime_api.h>

#include "call_info.h"
#include "hook_support.h"

namespace {

using gpuscope::fb::MemoryKind;
using gpuscope::hooks::AllocCall;
using gpuscope::hooks::allocation;
using gpuscope::hooks::registration;
using gpuscope::hooks::release;
using gpuscope::hooks::unregistration;
constexpr uint8_t P = gpuscope::hooks::kPerThreadStream;

AllocCall pitched(void** p, size_t* pitch, size_t rows) {
  AllocCall c = allocation(p, 0, MemoryKind::Device);
  c.out_pitch = pitch;
  c.rows = rows;
  return c;
}

AllocCall pitched_3d(cudaPitchedPtr* out, cudaExtent e) {
  AllocCall c = allocation(out == nullptr ? nullptr : &out->ptr, 0, MemoryKind::Device);
  c.out_pitch = out == nullptr ? nullptr : &out->pitch;
  c.rows = uint64_t{e.height} * e.depth;
  return c;
}

uint64_t element_bytes(const cudaChannelFormatDesc* d) {
  return d == nullptr ? 0 : (static_cast<uint64_t>(d->x) + d->y + d->z + d->w) / 8;
}

// An array of w x h x d elements (a height or depth of 0: one it lacks).
AllocCall array(cudaArray_t* out, const cudaChannelFormatDesc* desc, cudaExtent e) {
  const uint64_t element = element_bytes(desc);
  return gpuscope::hooks::array_allocation(reinterpret_cast<void* const*>(out), element,
                                           gpuscope::hooks::array_extent_bytes(element, e.width, e.height, e.depth));
}

AllocCall mipmapped(cudaMipmappedArray_t* out, const cudaChannelFormatDesc* desc, cudaExtent e, unsigned levels) {
  const uint64_t element = element_bytes(desc);
  return gpuscope::hooks::array_allocation(reinterpret_cast<void* const*>(out), element,
                                           gpuscope::hooks::mipmap_chain_bytes(element, e.width, e.height, e.depth, levels));
}

}  // namespace

#define GPUSCOPE_RUNTIME_ALLOC(X)                                                                                    \
  X(cudaError_t, cudaMalloc, 0, (void** p, size_t n), (p, n), (allocation(p, n, MemoryKind::Device)))                \
  X(cudaError_t, cudaFree, 0, (void* p), (p), (release(p, MemoryKind::Device)))                                      \
  X(cudaError_t, cudaMallocHost, 0, (void** p, size_t n), (p, n), (allocation(p, n, MemoryKind::Pinned)))            \
  X(cudaError_t, cudaFreeHost, 0, (void* p), (p), (release(p, MemoryKind::Pinned)))                                  \
  X(cudaError_t, cudaHostAlloc, 0, (void** p, size_t n, unsigned f), (p, n, f), (allocation(p, n, MemoryKind::Pinned)))\
  X(cudaError_t, cudaHostRegister, 0, (void* p, size_t n, unsigned f), (p, n, f), (registration(p, n)))              \
  X(cudaError_t, cudaHostUnregister, 0, (void* p), (p), (unregistration(p)))                                         \
  X(cudaError_t, cudaMallocManaged, 0, (void** p, size_t n, unsigned f), (p, n, f),                                  \
    (allocation(p, n, MemoryKind::Managed)))                                                                         \
  X(cudaError_t, cudaMallocAsync, 0, (void** p, size_t n, cudaStream_t s), (p, n, s),                                \
    (allocation(p, n, MemoryKind::Device, s, true)))                                                                 \
  X(cudaError_t, cudaMallocAsync_ptsz, P, (void** p, size_t n, cudaStream_t s), (p, n, s),                           \
    (allocation(p, n, MemoryKind::Device, s, true)))                                                                 \
  X(cudaError_t, cudaMallocFromPoolAsync, 0, (void** p, size_t n, cudaMemPool_t pool, cudaStream_t s), (p, n, pool, s),\
    (allocation(p, n, MemoryKind::Pool, s, true)))                                                                   \
  X(cudaError_t, cudaMallocFromPoolAsync_ptsz, P, (void** p, size_t n, cudaMemPool_t pool, cudaStream_t s),          \
    (p, n, pool, s), (allocation(p, n, MemoryKind::Pool, s, true)))                                                  \
  X(cudaError_t, cudaFreeAsync, 0, (void* p, cudaStream_t s), (p, s), (release(p, MemoryKind::Device, s, true)))     \
  X(cudaError_t, cudaFreeAsync_ptsz, P, (void* p, cudaStream_t s), (p, s), (release(p, MemoryKind::Device, s, true)))\
  X(cudaError_t, cudaMallocPitch, 0, (void** p, size_t* pitch, size_t w, size_t h), (p, pitch, w, h),                \
    (pitched(p, pitch, h)))                                                                                          \
  X(cudaError_t, cudaMalloc3D, 0, (cudaPitchedPtr* out, cudaExtent e), (out, e), (pitched_3d(out, e)))               \
  X(cudaError_t, cudaMallocArray, 0,                                                                                 \
    (cudaArray_t* a, const cudaChannelFormatDesc* d, size_t w, size_t h, unsigned f), (a, d, w, h, f),               \
    (array(a, d, cudaExtent{w, h, 0})))                                                                              \
  X(cudaError_t, cudaFreeArray, 0, (cudaArray_t a), (a), (release(a, MemoryKind::Array)))                            \
  X(cudaError_t, cudaMalloc3DArray, 0, (cudaArray_t* a, const cudaChannelFormatDesc* d, cudaExtent e, unsigned f),   \
    (a, d, e, f), (array(a, d, e)))                                                                                  \
  X(cudaError_t, cudaMallocMipmappedArray, 0,                                                                        \
    (cudaMipmappedArray_t* m, const cudaChannelFormatDesc* d, cudaExtent e, unsigned levels, unsigned f),            \
    (m, d, e, levels, f),                                                                                            \
    (mipmapped(m, d, e, levels)))                                                                                    \
  X(cudaError_t, cudaFreeMipmappedArray, 0, (cudaMipmappedArray_t m), (m), (release(m, MemoryKind::Array)))

GPUSCOPE_DEFINE_RUNTIME_FAMILY(GPUSCOPE_RUNTIME_ALLOC, runtime_alloc_hooks)
