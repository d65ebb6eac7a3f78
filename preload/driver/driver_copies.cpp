// CUDA driver copies and memsets (the _v2 entry points cuGetProcAddress hands
// out for CUDA >= 3.2, and their per-thread default stream variants). These
// are what a statically linked runtime, cuBLAS/cuDNN/NCCL and driver-API
// programs call; nested under a hooked runtime call they count once.
#include <cuda.h>

#include "hooks/call_info.h"
#include "hooks/hook_support.h"

namespace {

using gpuscope::hooks::copy;
using gpuscope::hooks::memset_of;
constexpr uint8_t D = gpuscope::hooks::kDriverApi;
constexpr uint8_t DP = gpuscope::hooks::kDriverApi | gpuscope::hooks::kPerThreadStream;
enum : int { kHtoH = 0, kHtoD = 1, kDtoH = 2, kDtoD = 3, kUnified = 4, kPeer = 5 };

const void* ptr(CUdeviceptr p) { return reinterpret_cast<const void*>(static_cast<uintptr_t>(p)); }

// A 2D/3D descriptor names its memory types; the kind follows from them.
int kind_of(CUmemorytype src, CUmemorytype dst) {
  const bool src_dev = src == CU_MEMORYTYPE_DEVICE || src == CU_MEMORYTYPE_ARRAY;
  const bool dst_dev = dst == CU_MEMORYTYPE_DEVICE || dst == CU_MEMORYTYPE_ARRAY;
  if (src == CU_MEMORYTYPE_UNIFIED || dst == CU_MEMORYTYPE_UNIFIED) return kUnified;
  return src_dev ? (dst_dev ? kDtoD : kDtoH) : (dst_dev ? kHtoD : kHtoH);
}

template <class Desc> const void* src_of(const Desc* d) {
  return d->srcMemoryType == CU_MEMORYTYPE_HOST ? d->srcHost : ptr(d->srcDevice);
}
template <class Desc> const void* dst_of(const Desc* d) {
  return d->dstMemoryType == CU_MEMORYTYPE_HOST ? d->dstHost : ptr(d->dstDevice);
}

gpuscope::hooks::CopyCall copy_2d(const CUDA_MEMCPY2D* d, CUstream s, bool async) {
  if (d == nullptr) return copy(nullptr, nullptr, 0, kUnified, s, async);
  return copy(dst_of(d), src_of(d), uint64_t{d->WidthInBytes} * d->Height, kind_of(d->srcMemoryType, d->dstMemoryType),
              s, async);
}

gpuscope::hooks::CopyCall copy_3d(const CUDA_MEMCPY3D* d, CUstream s, bool async) {
  if (d == nullptr) return copy(nullptr, nullptr, 0, kUnified, s, async);
  return copy(dst_of(d), src_of(d), uint64_t{d->WidthInBytes} * d->Height * d->Depth,
              kind_of(d->srcMemoryType, d->dstMemoryType), s, async);
}

}  // namespace

#define GPUSCOPE_DRIVER_COPIES(X)                                                                                     \
  X(CUresult, cuMemcpy, D, (CUdeviceptr d, CUdeviceptr s, size_t n), (d, s, n), (copy(ptr(d), ptr(s), n, kUnified, nullptr, false))) \
  X(CUresult, cuMemcpy_ptds, DP, (CUdeviceptr d, CUdeviceptr s, size_t n), (d, s, n),                                \
    (copy(ptr(d), ptr(s), n, kUnified, nullptr, false)))                                                              \
  X(CUresult, cuMemcpyAsync, D, (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st), (d, s, n, st),                 \
    (copy(ptr(d), ptr(s), n, kUnified, st, true)))                                                                    \
  X(CUresult, cuMemcpyAsync_ptsz, DP, (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st), (d, s, n, st),           \
    (copy(ptr(d), ptr(s), n, kUnified, st, true)))                                                                    \
  X(CUresult, cuMemcpyHtoD_v2, D, (CUdeviceptr d, const void* s, size_t n), (d, s, n), (copy(ptr(d), s, n, kHtoD, nullptr, false))) \
  X(CUresult, cuMemcpyHtoD_v2_ptds, DP, (CUdeviceptr d, const void* s, size_t n), (d, s, n),                          \
    (copy(ptr(d), s, n, kHtoD, nullptr, false)))                                                                      \
  X(CUresult, cuMemcpyDtoH_v2, D, (void* d, CUdeviceptr s, size_t n), (d, s, n), (copy(d, ptr(s), n, kDtoH, nullptr, false))) \
  X(CUresult, cuMemcpyDtoH_v2_ptds, DP, (void* d, CUdeviceptr s, size_t n), (d, s, n),                                \
    (copy(d, ptr(s), n, kDtoH, nullptr, false)))                                                                      \
  X(CUresult, cuMemcpyDtoD_v2, D, (CUdeviceptr d, CUdeviceptr s, size_t n), (d, s, n),                                \
    (copy(ptr(d), ptr(s), n, kDtoD, nullptr, false)))                                                                 \
  X(CUresult, cuMemcpyDtoD_v2_ptds, DP, (CUdeviceptr d, CUdeviceptr s, size_t n), (d, s, n),                          \
    (copy(ptr(d), ptr(s), n, kDtoD, nullptr, false)))                                                                 \
  X(CUresult, cuMemcpyHtoDAsync_v2, D, (CUdeviceptr d, const void* s, size_t n, CUstream st), (d, s, n, st),          \
    (copy(ptr(d), s, n, kHtoD, st, true)))                                                                            \
  X(CUresult, cuMemcpyHtoDAsync_v2_ptsz, DP, (CUdeviceptr d, const void* s, size_t n, CUstream st), (d, s, n, st),    \
    (copy(ptr(d), s, n, kHtoD, st, true)))                                                                            \
  X(CUresult, cuMemcpyDtoHAsync_v2, D, (void* d, CUdeviceptr s, size_t n, CUstream st), (d, s, n, st),                \
    (copy(d, ptr(s), n, kDtoH, st, true)))                                                                            \
  X(CUresult, cuMemcpyDtoHAsync_v2_ptsz, DP, (void* d, CUdeviceptr s, size_t n, CUstream st), (d, s, n, st),          \
    (copy(d, ptr(s), n, kDtoH, st, true)))                                                                            \
  X(CUresult, cuMemcpyDtoDAsync_v2, D, (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st), (d, s, n, st),          \
    (copy(ptr(d), ptr(s), n, kDtoD, st, true)))                                                                       \
  X(CUresult, cuMemcpyDtoDAsync_v2_ptsz, DP, (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st), (d, s, n, st),    \
    (copy(ptr(d), ptr(s), n, kDtoD, st, true)))                                                                       \
  X(CUresult, cuMemcpy2D_v2, D, (const CUDA_MEMCPY2D* p), (p), (copy_2d(p, nullptr, false)))                          \
  X(CUresult, cuMemcpy2D_v2_ptds, DP, (const CUDA_MEMCPY2D* p), (p), (copy_2d(p, nullptr, false)))                    \
  X(CUresult, cuMemcpy2DAsync_v2, D, (const CUDA_MEMCPY2D* p, CUstream st), (p, st), (copy_2d(p, st, true)))          \
  X(CUresult, cuMemcpy2DAsync_v2_ptsz, DP, (const CUDA_MEMCPY2D* p, CUstream st), (p, st), (copy_2d(p, st, true)))    \
  X(CUresult, cuMemcpy3D_v2, D, (const CUDA_MEMCPY3D* p), (p), (copy_3d(p, nullptr, false)))                          \
  X(CUresult, cuMemcpy3D_v2_ptds, DP, (const CUDA_MEMCPY3D* p), (p), (copy_3d(p, nullptr, false)))                    \
  X(CUresult, cuMemcpy3DAsync_v2, D, (const CUDA_MEMCPY3D* p, CUstream st), (p, st), (copy_3d(p, st, true)))          \
  X(CUresult, cuMemcpy3DAsync_v2_ptsz, DP, (const CUDA_MEMCPY3D* p, CUstream st), (p, st), (copy_3d(p, st, true)))    \
  X(CUresult, cuMemcpyPeer, D, (CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n), (d, dc, s, sc, n), \
    (copy(ptr(d), ptr(s), n, kPeer, nullptr, false)))                                                                 \
  X(CUresult, cuMemcpyPeerAsync, D, (CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n, CUstream st),\
    (d, dc, s, sc, n, st), (copy(ptr(d), ptr(s), n, kPeer, st, true)))                                                \
  X(CUresult, cuMemsetD8_v2, D, (CUdeviceptr d, unsigned char v, size_t n), (d, v, n), (memset_of(ptr(d), v, n, nullptr, false))) \
  X(CUresult, cuMemsetD8_v2_ptds, DP, (CUdeviceptr d, unsigned char v, size_t n), (d, v, n),                          \
    (memset_of(ptr(d), v, n, nullptr, false)))                                                                        \
  X(CUresult, cuMemsetD16_v2, D, (CUdeviceptr d, unsigned short v, size_t n), (d, v, n),                              \
    (memset_of(ptr(d), v, n * 2, nullptr, false)))                                                                    \
  X(CUresult, cuMemsetD32_v2, D, (CUdeviceptr d, unsigned int v, size_t n), (d, v, n),                                \
    (memset_of(ptr(d), v, n * 4, nullptr, false)))                                                                    \
  X(CUresult, cuMemsetD32_v2_ptds, DP, (CUdeviceptr d, unsigned int v, size_t n), (d, v, n),                          \
    (memset_of(ptr(d), v, n * 4, nullptr, false)))                                                                    \
  X(CUresult, cuMemsetD8Async, D, (CUdeviceptr d, unsigned char v, size_t n, CUstream st), (d, v, n, st),             \
    (memset_of(ptr(d), v, n, st, true)))                                                                              \
  X(CUresult, cuMemsetD8Async_ptsz, DP, (CUdeviceptr d, unsigned char v, size_t n, CUstream st), (d, v, n, st),       \
    (memset_of(ptr(d), v, n, st, true)))                                                                              \
  X(CUresult, cuMemsetD32Async, D, (CUdeviceptr d, unsigned int v, size_t n, CUstream st), (d, v, n, st),             \
    (memset_of(ptr(d), v, n * 4, st, true)))                                                                          \
  X(CUresult, cuMemsetD32Async_ptsz, DP, (CUdeviceptr d, unsigned int v, size_t n, CUstream st), (d, v, n, st),       \
    (memset_of(ptr(d), v, n * 4, st, true)))

GPUSCOPE_DEFINE_FAMILY(GPUSCOPE_DRIVER_COPIES, driver_copy_hooks)
