// CUDA driver copies and memsets (the _v2 entry points cuGetProcAddress hands
// out for CUDA >= 3.2, and their per-thread default stream variants): linear,
// array, 2D/3D, peer and batched copies; 8/16/32-bit and 2D memsets. These
// are what a statically linked runtime, cuBLAS/cuDNN/NCCL and driver-API
// programs call; nested under a hooked runtime call they count once.
#include <cuda.h>
// cuda.h names the batched copies' _v2; CUDA 12.8's first forms (with the
// index of a failing copy before the stream) are hooked by their own names,
// which cuda.h declares only for the driver's own build.
#undef cuMemcpyBatchAsync
#undef cuMemcpy3DBatchAsync

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

// One side's address: the host pointer, the array handle or the device pointer.
const void* side(CUmemorytype type, const void* host, CUarray array, CUdeviceptr device) {
  if (type == CU_MEMORYTYPE_HOST) return host;
  return type == CU_MEMORYTYPE_ARRAY ? static_cast<const void*>(array) : ptr(device);
}
template <class Desc> const void* src_of(const Desc* d) {
  return side(d->srcMemoryType, d->srcHost, d->srcArray, d->srcDevice);
}
template <class Desc> const void* dst_of(const Desc* d) {
  return side(d->dstMemoryType, d->dstHost, d->dstArray, d->dstDevice);
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

gpuscope::hooks::CopyCall peer_3d(const CUDA_MEMCPY3D_PEER* d, CUstream s, bool async) {
  if (d == nullptr) return copy(nullptr, nullptr, 0, kPeer, s, async);
  return copy(dst_of(d), src_of(d), uint64_t{d->WidthInBytes} * d->Height * d->Depth, kPeer, s, async);
}

const void* operand(const CUmemcpy3DOperand& o) {
  return o.type == CU_MEMCPY_OPERAND_TYPE_ARRAY ? static_cast<const void*>(o.op.array.array) : ptr(o.op.ptr.ptr);
}

// A batch is one call: its bytes together, its sides the first copy's.
gpuscope::hooks::CopyCall batch(const CUdeviceptr* dsts, const CUdeviceptr* srcs, const size_t* sizes, size_t n,
                                CUstream s) {
  if (dsts == nullptr || srcs == nullptr || n == 0) return copy(nullptr, nullptr, 0, kUnified, s, true);
  return copy(ptr(dsts[0]), ptr(srcs[0]), gpuscope::hooks::batch_bytes(sizes, n), kUnified, s, true);
}

gpuscope::hooks::CopyCall batch_3d(size_t n, const CUDA_MEMCPY3D_BATCH_OP* ops, CUstream s) {
  if (ops == nullptr || n == 0) return copy(nullptr, nullptr, 0, kUnified, s, true);
  return copy(operand(ops[0].dst), operand(ops[0].src),
              gpuscope::hooks::batch_3d_bytes<CU_MEMCPY_OPERAND_TYPE_ARRAY>(ops, n), kUnified, s, true);
}

const void* array(CUarray a) { return static_cast<const void*>(a); }

}  // namespace

#define GPUSCOPE_CU_MEMSET_2D(T) (CUdeviceptr d, size_t p, T v, size_t w, size_t h)
#define GPUSCOPE_CU_MEMSET_2D_ASYNC(T) (CUdeviceptr d, size_t p, T v, size_t w, size_t h, CUstream st)
#define GPUSCOPE_CU_BATCH_3D (size_t n, CUDA_MEMCPY3D_BATCH_OP * ops, unsigned long long f, CUstream st)
#define GPUSCOPE_CU_BATCH                                                                                            \
  (CUdeviceptr * d, CUdeviceptr * s, size_t * n, size_t count, CUmemcpyAttributes * a, size_t * ai, size_t na,        \
   CUstream st)
#define GPUSCOPE_CU_BATCH_V1                                                                                         \
  (CUdeviceptr * d, CUdeviceptr * s, size_t * n, size_t count, CUmemcpyAttributes * a, size_t * ai, size_t na,        \
   size_t * fail, CUstream st)
#define GPUSCOPE_CU_BATCH_3D_V1                                                                                      \
  (size_t n, CUDA_MEMCPY3D_BATCH_OP * ops, size_t * fail, unsigned long long f, CUstream st)

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
  X(CUresult, cuMemcpyHtoA_v2, D, (CUarray a, size_t off, const void* s, size_t n), (a, off, s, n),                  \
    (copy(array(a), s, n, kHtoD, nullptr, false)))                                                                    \
  X(CUresult, cuMemcpyHtoA_v2_ptds, DP, (CUarray a, size_t off, const void* s, size_t n), (a, off, s, n),            \
    (copy(array(a), s, n, kHtoD, nullptr, false)))                                                                    \
  X(CUresult, cuMemcpyAtoH_v2, D, (void* d, CUarray a, size_t off, size_t n), (d, a, off, n),                        \
    (copy(d, array(a), n, kDtoH, nullptr, false)))                                                                    \
  X(CUresult, cuMemcpyAtoH_v2_ptds, DP, (void* d, CUarray a, size_t off, size_t n), (d, a, off, n),                  \
    (copy(d, array(a), n, kDtoH, nullptr, false)))                                                                    \
  X(CUresult, cuMemcpyHtoAAsync_v2, D, (CUarray a, size_t off, const void* s, size_t n, CUstream st),                \
    (a, off, s, n, st), (copy(array(a), s, n, kHtoD, st, true)))                                                      \
  X(CUresult, cuMemcpyHtoAAsync_v2_ptsz, DP, (CUarray a, size_t off, const void* s, size_t n, CUstream st),          \
    (a, off, s, n, st), (copy(array(a), s, n, kHtoD, st, true)))                                                      \
  X(CUresult, cuMemcpyAtoHAsync_v2, D, (void* d, CUarray a, size_t off, size_t n, CUstream st), (d, a, off, n, st),  \
    (copy(d, array(a), n, kDtoH, st, true)))                                                                          \
  X(CUresult, cuMemcpyAtoHAsync_v2_ptsz, DP, (void* d, CUarray a, size_t off, size_t n, CUstream st),                \
    (d, a, off, n, st), (copy(d, array(a), n, kDtoH, st, true)))                                                      \
  X(CUresult, cuMemcpyDtoA_v2, D, (CUarray a, size_t off, CUdeviceptr s, size_t n), (a, off, s, n),                  \
    (copy(array(a), ptr(s), n, kDtoD, nullptr, false)))                                                               \
  X(CUresult, cuMemcpyDtoA_v2_ptds, DP, (CUarray a, size_t off, CUdeviceptr s, size_t n), (a, off, s, n),            \
    (copy(array(a), ptr(s), n, kDtoD, nullptr, false)))                                                               \
  X(CUresult, cuMemcpyAtoD_v2, D, (CUdeviceptr d, CUarray a, size_t off, size_t n), (d, a, off, n),                  \
    (copy(ptr(d), array(a), n, kDtoD, nullptr, false)))                                                               \
  X(CUresult, cuMemcpyAtoD_v2_ptds, DP, (CUdeviceptr d, CUarray a, size_t off, size_t n), (d, a, off, n),            \
    (copy(ptr(d), array(a), n, kDtoD, nullptr, false)))                                                               \
  X(CUresult, cuMemcpyAtoA_v2, D, (CUarray d, size_t doff, CUarray a, size_t off, size_t n), (d, doff, a, off, n),   \
    (copy(array(d), array(a), n, kDtoD, nullptr, false)))                                                             \
  X(CUresult, cuMemcpyAtoA_v2_ptds, DP, (CUarray d, size_t doff, CUarray a, size_t off, size_t n),                   \
    (d, doff, a, off, n), (copy(array(d), array(a), n, kDtoD, nullptr, false)))                                       \
  X(CUresult, cuMemcpy2DUnaligned_v2, D, (const CUDA_MEMCPY2D* p), (p), (copy_2d(p, nullptr, false)))                \
  X(CUresult, cuMemcpy2DUnaligned_v2_ptds, DP, (const CUDA_MEMCPY2D* p), (p), (copy_2d(p, nullptr, false)))          \
  X(CUresult, cuMemcpy3DPeer, D, (const CUDA_MEMCPY3D_PEER* p), (p), (peer_3d(p, nullptr, false)))                   \
  X(CUresult, cuMemcpy3DPeer_ptds, DP, (const CUDA_MEMCPY3D_PEER* p), (p), (peer_3d(p, nullptr, false)))             \
  X(CUresult, cuMemcpy3DPeerAsync, D, (const CUDA_MEMCPY3D_PEER* p, CUstream st), (p, st), (peer_3d(p, st, true)))   \
  X(CUresult, cuMemcpy3DPeerAsync_ptsz, DP, (const CUDA_MEMCPY3D_PEER* p, CUstream st), (p, st),                     \
    (peer_3d(p, st, true)))                                                                                           \
  X(CUresult, cuMemcpyBatchAsync_v2, D, GPUSCOPE_CU_BATCH, (d, s, n, count, a, ai, na, st),                         \
    (batch(d, s, n, count, st)))                                                                                      \
  X(CUresult, cuMemcpyBatchAsync_v2_ptsz, DP, GPUSCOPE_CU_BATCH, (d, s, n, count, a, ai, na, st),                    \
    (batch(d, s, n, count, st)))                                                                                      \
  X(CUresult, cuMemcpyBatchAsync, D, GPUSCOPE_CU_BATCH_V1, (d, s, n, count, a, ai, na, fail, st),                   \
    (batch(d, s, n, count, st)))                                                                                      \
  X(CUresult, cuMemcpyBatchAsync_ptsz, DP, GPUSCOPE_CU_BATCH_V1, (d, s, n, count, a, ai, na, fail, st),              \
    (batch(d, s, n, count, st)))                                                                                      \
  X(CUresult, cuMemcpy3DBatchAsync, D, GPUSCOPE_CU_BATCH_3D_V1, (n, ops, fail, f, st), (batch_3d(n, ops, st)))       \
  X(CUresult, cuMemcpy3DBatchAsync_ptsz, DP, GPUSCOPE_CU_BATCH_3D_V1, (n, ops, fail, f, st), (batch_3d(n, ops, st))) \
  X(CUresult, cuMemcpy3DBatchAsync_v2, D, GPUSCOPE_CU_BATCH_3D, (n, ops, f, st), (batch_3d(n, ops, st)))             \
  X(CUresult, cuMemcpy3DBatchAsync_v2_ptsz, DP, GPUSCOPE_CU_BATCH_3D, (n, ops, f, st), (batch_3d(n, ops, st)))       \
  X(CUresult, cuMemcpyPeer, D, (CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n), (d, dc, s, sc, n), \
    (copy(ptr(d), ptr(s), n, kPeer, nullptr, false)))                                                                 \
  X(CUresult, cuMemcpyPeerAsync, D, (CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n, CUstream st),\
    (d, dc, s, sc, n, st), (copy(ptr(d), ptr(s), n, kPeer, st, true)))                                                \
  X(CUresult, cuMemsetD8_v2, D, (CUdeviceptr d, unsigned char v, size_t n), (d, v, n), (memset_of(ptr(d), v, n, nullptr, false))) \
  X(CUresult, cuMemsetD8_v2_ptds, DP, (CUdeviceptr d, unsigned char v, size_t n), (d, v, n),                          \
    (memset_of(ptr(d), v, n, nullptr, false)))                                                                        \
  X(CUresult, cuMemsetD16_v2, D, (CUdeviceptr d, unsigned short v, size_t n), (d, v, n),                              \
    (memset_of(ptr(d), v, n * 2, nullptr, false)))                                                                    \
  X(CUresult, cuMemsetD16_v2_ptds, DP, (CUdeviceptr d, unsigned short v, size_t n), (d, v, n),                        \
    (memset_of(ptr(d), v, n * 2, nullptr, false)))                                                                    \
  X(CUresult, cuMemsetD16Async, D, (CUdeviceptr d, unsigned short v, size_t n, CUstream st), (d, v, n, st),           \
    (memset_of(ptr(d), v, n * 2, st, true)))                                                                          \
  X(CUresult, cuMemsetD16Async_ptsz, DP, (CUdeviceptr d, unsigned short v, size_t n, CUstream st), (d, v, n, st),     \
    (memset_of(ptr(d), v, n * 2, st, true)))                                                                          \
  X(CUresult, cuMemsetD2D8_v2, D, GPUSCOPE_CU_MEMSET_2D(unsigned char), (d, p, v, w, h),                             \
    (memset_of(ptr(d), v, uint64_t{w} * h, nullptr, false)))                                                          \
  X(CUresult, cuMemsetD2D8_v2_ptds, DP, GPUSCOPE_CU_MEMSET_2D(unsigned char), (d, p, v, w, h),                       \
    (memset_of(ptr(d), v, uint64_t{w} * h, nullptr, false)))                                                          \
  X(CUresult, cuMemsetD2D16_v2, D, GPUSCOPE_CU_MEMSET_2D(unsigned short), (d, p, v, w, h),                           \
    (memset_of(ptr(d), v, uint64_t{w} * h * 2, nullptr, false)))                                                      \
  X(CUresult, cuMemsetD2D16_v2_ptds, DP, GPUSCOPE_CU_MEMSET_2D(unsigned short), (d, p, v, w, h),                     \
    (memset_of(ptr(d), v, uint64_t{w} * h * 2, nullptr, false)))                                                      \
  X(CUresult, cuMemsetD2D32_v2, D, GPUSCOPE_CU_MEMSET_2D(unsigned int), (d, p, v, w, h),                             \
    (memset_of(ptr(d), v, uint64_t{w} * h * 4, nullptr, false)))                                                      \
  X(CUresult, cuMemsetD2D32_v2_ptds, DP, GPUSCOPE_CU_MEMSET_2D(unsigned int), (d, p, v, w, h),                       \
    (memset_of(ptr(d), v, uint64_t{w} * h * 4, nullptr, false)))                                                      \
  X(CUresult, cuMemsetD2D8Async, D, GPUSCOPE_CU_MEMSET_2D_ASYNC(unsigned char), (d, p, v, w, h, st),                 \
    (memset_of(ptr(d), v, uint64_t{w} * h, st, true)))                                                                \
  X(CUresult, cuMemsetD2D8Async_ptsz, DP, GPUSCOPE_CU_MEMSET_2D_ASYNC(unsigned char), (d, p, v, w, h, st),           \
    (memset_of(ptr(d), v, uint64_t{w} * h, st, true)))                                                                \
  X(CUresult, cuMemsetD2D16Async, D, GPUSCOPE_CU_MEMSET_2D_ASYNC(unsigned short), (d, p, v, w, h, st),               \
    (memset_of(ptr(d), v, uint64_t{w} * h * 2, st, true)))                                                            \
  X(CUresult, cuMemsetD2D16Async_ptsz, DP, GPUSCOPE_CU_MEMSET_2D_ASYNC(unsigned short), (d, p, v, w, h, st),         \
    (memset_of(ptr(d), v, uint64_t{w} * h * 2, st, true)))                                                            \
  X(CUresult, cuMemsetD2D32Async, D, GPUSCOPE_CU_MEMSET_2D_ASYNC(unsigned int), (d, p, v, w, h, st),                 \
    (memset_of(ptr(d), v, uint64_t{w} * h * 4, st, true)))                                                            \
  X(CUresult, cuMemsetD2D32Async_ptsz, DP, GPUSCOPE_CU_MEMSET_2D_ASYNC(unsigned int), (d, p, v, w, h, st),           \
    (memset_of(ptr(d), v, uint64_t{w} * h * 4, st, true)))                                                            \
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
