// CUDA driver allocation: device, pinned host, registered, managed, pooled,
// pitched and array memory (what texture code and video decoders allocate),
// and their frees.
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

// Bytes per channel of an array format; 0 where the format has no fixed
// element (block-compressed and planar video formats): their size is not
// counted rather than guessed.
uint64_t channel_bytes(CUarray_format f) {
  switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
    case CU_AD_FORMAT_UNORM_INT8X1:
    case CU_AD_FORMAT_UNORM_INT8X2:
    case CU_AD_FORMAT_UNORM_INT8X4:
    case CU_AD_FORMAT_SNORM_INT8X1:
    case CU_AD_FORMAT_SNORM_INT8X2:
    case CU_AD_FORMAT_SNORM_INT8X4:
    case CU_AD_FORMAT_UNORM_INT_101010_2: return 1;  // 4 channels in 4 bytes
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
    case CU_AD_FORMAT_UNORM_INT16X1:
    case CU_AD_FORMAT_UNORM_INT16X2:
    case CU_AD_FORMAT_UNORM_INT16X4:
    case CU_AD_FORMAT_SNORM_INT16X1:
    case CU_AD_FORMAT_SNORM_INT16X2:
    case CU_AD_FORMAT_SNORM_INT16X4: return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT: return 4;
    default: return 0;
  }
}

template <class Descriptor>
uint64_t element_bytes(const Descriptor* d) {
  return d == nullptr ? 0 : channel_bytes(d->Format) * d->NumChannels;
}

AllocCall array_2d(CUarray* out, const CUDA_ARRAY_DESCRIPTOR* d) {
  const uint64_t element = element_bytes(d);
  const uint64_t bytes = d == nullptr ? 0 : gpuscope::hooks::array_extent_bytes(element, d->Width, d->Height, 0);
  return gpuscope::hooks::array_allocation(reinterpret_cast<void* const*>(out), element, bytes);
}

AllocCall array_3d(CUarray* out, const CUDA_ARRAY3D_DESCRIPTOR* d) {
  const uint64_t element = element_bytes(d);
  const uint64_t bytes = d == nullptr ? 0 : gpuscope::hooks::array_extent_bytes(element, d->Width, d->Height, d->Depth);
  return gpuscope::hooks::array_allocation(reinterpret_cast<void* const*>(out), element, bytes);
}

AllocCall mipmapped(CUmipmappedArray* out, const CUDA_ARRAY3D_DESCRIPTOR* d, unsigned levels) {
  const uint64_t element = element_bytes(d);
  const uint64_t bytes =
      d == nullptr ? 0 : gpuscope::hooks::mipmap_chain_bytes(element, d->Width, d->Height, d->Depth, levels);
  return gpuscope::hooks::array_allocation(reinterpret_cast<void* const*>(out), element, bytes);
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
    (release(ptr(p), MemoryKind::Device, s, true)))                                                               \
  X(CUresult, cuArrayCreate_v2, D, (CUarray* a, const CUDA_ARRAY_DESCRIPTOR* d), (a, d), (array_2d(a, d)))          \
  X(CUresult, cuArray3DCreate_v2, D, (CUarray* a, const CUDA_ARRAY3D_DESCRIPTOR* d), (a, d), (array_3d(a, d)))      \
  X(CUresult, cuArrayDestroy, D, (CUarray a), (a), (release(a, MemoryKind::Array)))                                \
  X(CUresult, cuMipmappedArrayCreate, D, (CUmipmappedArray* m, const CUDA_ARRAY3D_DESCRIPTOR* d, unsigned levels), \
    (m, d, levels), (mipmapped(m, d, levels)))                                                                    \
  X(CUresult, cuMipmappedArrayDestroy, D, (CUmipmappedArray m), (m), (release(m, MemoryKind::Array)))

GPUSCOPE_DEFINE_FAMILY(GPUSCOPE_DRIVER_ALLOC, driver_alloc_hooks)
