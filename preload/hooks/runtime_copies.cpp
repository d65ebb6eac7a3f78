// CUDA runtime copies: every cudaMemcpy* form (arrays, peers and batches
// included), with the per-thread default stream variants (_ptds, _ptsz)
// that code built with --default-stream per-thread calls instead.
//
// The batched copies' declarations are renamed out of the way: their hooks
// take CUDA 12's parameter lists (cuda12_caller below).
#define cudaMemcpyBatchAsync gpuscope_cuda13_cudaMemcpyBatchAsync
#define cudaMemcpyBatchAsync_ptsz gpuscope_cuda13_cudaMemcpyBatchAsync_ptsz
#define cudaMemcpy3DBatchAsync gpuscope_cuda13_cudaMemcpy3DBatchAsync
#define cudaMemcpy3DBatchAsync_ptsz gpuscope_cuda13_cudaMemcpy3DBatchAsync_ptsz
#include <cuda_runtime_api.h>
#undef cudaMemcpyBatchAsync
#undef cudaMemcpyBatchAsync_ptsz
#undef cudaMemcpy3DBatchAsync
#undef cudaMemcpy3DBatchAsync_ptsz


#include "call_info.h"
#include "hook_support.h"
#include "runtime_abi.h"

namespace {

using gpuscope::hooks::batch_bytes;
using gpuscope::hooks::copy;
constexpr uint8_t P = gpuscope::hooks::kPerThreadStream;
using ConstArray = cudaArray_const_t;

// A 3D copy's extent counts the elements of its array side, if it has one.
uint64_t extent_bytes(const cudaMemcpy3DParms* p) {
  return p == nullptr ? 0
                      : gpuscope::hooks::element_extent_bytes(p->dstArray, p->srcArray, p->extent.width,
                                                              p->extent.height, p->extent.depth);
}
// Each side is named by its pointer, or by its array handle.
const void* dst_of(const cudaMemcpy3DParms* p) {
  return p == nullptr ? nullptr : p->dstArray != nullptr ? static_cast<const void*>(p->dstArray) : p->dstPtr.ptr;
}
const void* src_of(const cudaMemcpy3DParms* p) {
  return p == nullptr ? nullptr : p->srcArray != nullptr ? static_cast<const void*>(p->srcArray) : p->srcPtr.ptr;
}
int kind_of(const cudaMemcpy3DParms* p) { return p == nullptr ? cudaMemcpyDefault : p->kind; }

// Peer copies name each side by pointer or array.
gpuscope::hooks::CopyCall peer_3d(const cudaMemcpy3DPeerParms* p, cudaStream_t s, bool async) {
  if (p == nullptr) return copy(nullptr, nullptr, 0, cudaMemcpyDefault, s, async);
  const void* dst = p->dstArray != nullptr ? static_cast<const void*>(p->dstArray) : p->dstPtr.ptr;
  const void* src = p->srcArray != nullptr ? static_cast<const void*>(p->srcArray) : p->srcPtr.ptr;
  const uint64_t bytes = gpuscope::hooks::element_extent_bytes(p->dstArray, p->srcArray, p->extent.width,
                                                               p->extent.height, p->extent.depth);
  return copy(dst, src, bytes, 5, s, async);
}

// CUDA 12.8 and 12.9 gave both batched copies a `failIdx` parameter before
// the stream, which CUDA 13 dropped, and a libcudart.so.12 caller reaches
// these hooks too (its alias, runtime_versions.h; or the default export,
// unversioned). So the hooks take CUDA 12's longer parameter list and pass
// all of it on: a CUDA 13 runtime never reads the extra argument (the
// caller owns its register or stack slot). Which argument is the stream
// depends on the caller's release (runtime_abi.h).
bool cuda12_caller(const gpuscope::hooks::HookSlot& slot, const void* real) noexcept {
  return gpuscope::hooks::caller_cuda_major(slot, real) == 12;
}
cudaStream_t stream_arg(uintptr_t v) { return reinterpret_cast<cudaStream_t>(v); }

// A batch is one call: its bytes together, its sides the first copy's.
const void* operand(const cudaMemcpy3DOperand& o) {
  return o.type == cudaMemcpyOperandTypeArray ? static_cast<const void*>(o.op.array.array) : o.op.ptr.ptr;
}
// (n, ops, flags, stream) in CUDA 13; (n, ops, failIdx, flags, stream) in 12:
// the stream is the fourth argument or the fifth.
gpuscope::hooks::CopyCall batch_3d(size_t n, const cudaMemcpy3DBatchOp* ops, uintptr_t a4, uintptr_t a5,
                                   const gpuscope::hooks::HookSlot& slot, const void* real) {
  const cudaStream_t s = stream_arg(cuda12_caller(slot, real) ? a5 : a4);
  if (ops == nullptr || n == 0) return copy(nullptr, nullptr, 0, cudaMemcpyDefault, s, true);
  return copy(operand(ops[0].dst), operand(ops[0].src),
              gpuscope::hooks::batch_3d_bytes<cudaMemcpyOperandTypeArray>(ops, n), cudaMemcpyDefault, s, true);
}

// (..., numAttrs, stream) in CUDA 13; (..., numAttrs, failIdx, stream) in 12.
gpuscope::hooks::CopyCall batch(void* const* dsts, const void* const* srcs, const size_t* sizes, size_t count,
                                uintptr_t a8, uintptr_t a9, const gpuscope::hooks::HookSlot& slot,
                                const void* real) {
  const cudaStream_t s = stream_arg(cuda12_caller(slot, real) ? a9 : a8);
  const bool any = dsts != nullptr && srcs != nullptr && count != 0;
  return copy(any ? dsts[0] : nullptr, any ? srcs[0] : nullptr, batch_bytes(sizes, count), cudaMemcpyDefault, s, true);
}

}  // namespace

// The 1D array copies are deprecated, but still exported and still in
// older samples (simpleTexture's generation of code): hooking them names
// them, which the header warns about.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#define GPUSCOPE_TO_ARRAY (cudaArray_t a, size_t wo, size_t ho, const void* src, size_t n, cudaMemcpyKind k)
#define GPUSCOPE_FROM_ARRAY (void* dst, ConstArray a, size_t wo, size_t ho, size_t n, cudaMemcpyKind k)
#define GPUSCOPE_ARRAY_TO_ARRAY \
  (cudaArray_t d, size_t dwo, size_t dho, ConstArray a, size_t wo, size_t ho, size_t n, cudaMemcpyKind k)
#define GPUSCOPE_TO_ARRAY_ASYNC \
  (cudaArray_t a, size_t wo, size_t ho, const void* src, size_t n, cudaMemcpyKind k, cudaStream_t s)
#define GPUSCOPE_FROM_ARRAY_ASYNC \
  (void* dst, ConstArray a, size_t wo, size_t ho, size_t n, cudaMemcpyKind k, cudaStream_t s)
// The batched copies' CUDA 12 parameter lists (see cuda12_caller).
#define GPUSCOPE_BATCH_3D (size_t n, cudaMemcpy3DBatchOp* ops, uintptr_t a3, uintptr_t a4, uintptr_t a5)
#define GPUSCOPE_BATCH                                                                                               \
  (void* const* dsts, const void* const* srcs, const size_t* sizes, size_t count, cudaMemcpyAttributes* attrs,      \
   size_t* idxs, size_t nattrs, uintptr_t a8, uintptr_t a9)

// Ret, name, flags, (parameters), (arguments), CallInfo
#define GPUSCOPE_RUNTIME_COPIES(X)                                                                                   \
  X(cudaError_t, cudaMemcpy, 0, (void* dst, const void* src, size_t n, cudaMemcpyKind k), (dst, src, n, k),           \
    (copy(dst, src, n, k, nullptr, false)))                                                                          \
  X(cudaError_t, cudaMemcpy_ptds, P, (void* dst, const void* src, size_t n, cudaMemcpyKind k), (dst, src, n, k),      \
    (copy(dst, src, n, k, nullptr, false)))                                                                          \
  X(cudaError_t, cudaMemcpyAsync, 0, (void* dst, const void* src, size_t n, cudaMemcpyKind k, cudaStream_t s),        \
    (dst, src, n, k, s), (copy(dst, src, n, k, s, true)))                                                            \
  X(cudaError_t, cudaMemcpyAsync_ptsz, P, (void* dst, const void* src, size_t n, cudaMemcpyKind k, cudaStream_t s),   \
    (dst, src, n, k, s), (copy(dst, src, n, k, s, true)))                                                            \
  X(cudaError_t, cudaMemcpy2D, 0,                                                                                     \
    (void* dst, size_t dp, const void* src, size_t sp, size_t w, size_t h, cudaMemcpyKind k),                        \
    (dst, dp, src, sp, w, h, k), (copy(dst, src, uint64_t{w} * h, k, nullptr, false)))                                \
  X(cudaError_t, cudaMemcpy2D_ptds, P,                                                                                \
    (void* dst, size_t dp, const void* src, size_t sp, size_t w, size_t h, cudaMemcpyKind k),                        \
    (dst, dp, src, sp, w, h, k), (copy(dst, src, uint64_t{w} * h, k, nullptr, false)))                                \
  X(cudaError_t, cudaMemcpy2DAsync, 0,                                                                                \
    (void* dst, size_t dp, const void* src, size_t sp, size_t w, size_t h, cudaMemcpyKind k, cudaStream_t s),        \
    (dst, dp, src, sp, w, h, k, s), (copy(dst, src, uint64_t{w} * h, k, s, true)))                                    \
  X(cudaError_t, cudaMemcpy2DAsync_ptsz, P,                                                                           \
    (void* dst, size_t dp, const void* src, size_t sp, size_t w, size_t h, cudaMemcpyKind k, cudaStream_t s),        \
    (dst, dp, src, sp, w, h, k, s), (copy(dst, src, uint64_t{w} * h, k, s, true)))                                    \
  X(cudaError_t, cudaMemcpy2DToArray, 0,                                                                              \
    (cudaArray_t a, size_t wo, size_t ho, const void* src, size_t sp, size_t w, size_t h, cudaMemcpyKind k),         \
    (a, wo, ho, src, sp, w, h, k), (copy(a, src, uint64_t{w} * h, k, nullptr, false)))                               \
  X(cudaError_t, cudaMemcpy2DToArray_ptds, P,                                                                         \
    (cudaArray_t a, size_t wo, size_t ho, const void* src, size_t sp, size_t w, size_t h, cudaMemcpyKind k),         \
    (a, wo, ho, src, sp, w, h, k), (copy(a, src, uint64_t{w} * h, k, nullptr, false)))                               \
  X(cudaError_t, cudaMemcpy2DToArrayAsync, 0,                                                                         \
    (cudaArray_t a, size_t wo, size_t ho, const void* src, size_t sp, size_t w, size_t h, cudaMemcpyKind k,          \
     cudaStream_t s),                                                                                                \
    (a, wo, ho, src, sp, w, h, k, s), (copy(a, src, uint64_t{w} * h, k, s, true)))                                   \
  X(cudaError_t, cudaMemcpy2DToArrayAsync_ptsz, P,                                                                    \
    (cudaArray_t a, size_t wo, size_t ho, const void* src, size_t sp, size_t w, size_t h, cudaMemcpyKind k,          \
     cudaStream_t s),                                                                                                \
    (a, wo, ho, src, sp, w, h, k, s), (copy(a, src, uint64_t{w} * h, k, s, true)))                                   \
  X(cudaError_t, cudaMemcpy2DFromArray, 0,                                                                            \
    (void* dst, size_t dp, ConstArray a, size_t wo, size_t ho, size_t w, size_t h, cudaMemcpyKind k),                \
    (dst, dp, a, wo, ho, w, h, k), (copy(dst, a, uint64_t{w} * h, k, nullptr, false)))                               \
  X(cudaError_t, cudaMemcpy2DFromArray_ptds, P,                                                                       \
    (void* dst, size_t dp, ConstArray a, size_t wo, size_t ho, size_t w, size_t h, cudaMemcpyKind k),                \
    (dst, dp, a, wo, ho, w, h, k), (copy(dst, a, uint64_t{w} * h, k, nullptr, false)))                               \
  X(cudaError_t, cudaMemcpy2DFromArrayAsync, 0,                                                                       \
    (void* dst, size_t dp, ConstArray a, size_t wo, size_t ho, size_t w, size_t h, cudaMemcpyKind k,                 \
     cudaStream_t s),                                                                                                \
    (dst, dp, a, wo, ho, w, h, k, s), (copy(dst, a, uint64_t{w} * h, k, s, true)))                                  \
  X(cudaError_t, cudaMemcpy2DFromArrayAsync_ptsz, P,                                                                  \
    (void* dst, size_t dp, ConstArray a, size_t wo, size_t ho, size_t w, size_t h, cudaMemcpyKind k,                 \
     cudaStream_t s),                                                                                                \
    (dst, dp, a, wo, ho, w, h, k, s), (copy(dst, a, uint64_t{w} * h, k, s, true)))                                   \
  X(cudaError_t, cudaMemcpy2DArrayToArray, 0,                                                                         \
    (cudaArray_t d, size_t dwo, size_t dho, ConstArray a, size_t wo, size_t ho, size_t w, size_t h, cudaMemcpyKind k),\
    (d, dwo, dho, a, wo, ho, w, h, k), (copy(d, a, uint64_t{w} * h, k, nullptr, false)))                             \
  X(cudaError_t, cudaMemcpy2DArrayToArray_ptds, P,                                                                    \
    (cudaArray_t d, size_t dwo, size_t dho, ConstArray a, size_t wo, size_t ho, size_t w, size_t h, cudaMemcpyKind k),\
    (d, dwo, dho, a, wo, ho, w, h, k), (copy(d, a, uint64_t{w} * h, k, nullptr, false)))                             \
  X(cudaError_t, cudaMemcpy3DPeer, 0, (const cudaMemcpy3DPeerParms* p), (p), (peer_3d(p, nullptr, false)))          \
  X(cudaError_t, cudaMemcpy3DPeer_ptds, P, (const cudaMemcpy3DPeerParms* p), (p), (peer_3d(p, nullptr, false)))     \
  X(cudaError_t, cudaMemcpy3DPeerAsync, 0, (const cudaMemcpy3DPeerParms* p, cudaStream_t s), (p, s),                \
    (peer_3d(p, s, true)))                                                                                           \
  X(cudaError_t, cudaMemcpy3DPeerAsync_ptsz, P, (const cudaMemcpy3DPeerParms* p, cudaStream_t s), (p, s),           \
    (peer_3d(p, s, true)))                                                                                           \
  X(cudaError_t, cudaMemcpy3D, 0, (const cudaMemcpy3DParms* p), (p),                                                 \
    (copy(dst_of(p), src_of(p), extent_bytes(p), kind_of(p), nullptr, false)))                                      \
  X(cudaError_t, cudaMemcpy3D_ptds, P, (const cudaMemcpy3DParms* p), (p),                                            \
    (copy(dst_of(p), src_of(p), extent_bytes(p), kind_of(p), nullptr, false)))                                       \
  X(cudaError_t, cudaMemcpy3DAsync, 0, (const cudaMemcpy3DParms* p, cudaStream_t s), (p, s),                         \
    (copy(dst_of(p), src_of(p), extent_bytes(p), kind_of(p), s, true)))                                              \
  X(cudaError_t, cudaMemcpy3DAsync_ptsz, P, (const cudaMemcpy3DParms* p, cudaStream_t s), (p, s),                    \
    (copy(dst_of(p), src_of(p), extent_bytes(p), kind_of(p), s, true)))                                              \
  X(cudaError_t, cudaMemcpyToSymbol, 0, (const void* sym, const void* src, size_t n, size_t off, cudaMemcpyKind k),   \
    (sym, src, n, off, k), (copy(sym, src, n, k, nullptr, false)))                                                   \
  X(cudaError_t, cudaMemcpyToSymbol_ptds, P,                                                                          \
    (const void* sym, const void* src, size_t n, size_t off, cudaMemcpyKind k), (sym, src, n, off, k),               \
    (copy(sym, src, n, k, nullptr, false)))                                                                          \
  X(cudaError_t, cudaMemcpyFromSymbol, 0, (void* dst, const void* sym, size_t n, size_t off, cudaMemcpyKind k),       \
    (dst, sym, n, off, k), (copy(dst, sym, n, k, nullptr, false)))                                                   \
  X(cudaError_t, cudaMemcpyFromSymbol_ptds, P, (void* dst, const void* sym, size_t n, size_t off, cudaMemcpyKind k),  \
    (dst, sym, n, off, k), (copy(dst, sym, n, k, nullptr, false)))                                                   \
  X(cudaError_t, cudaMemcpyToSymbolAsync, 0,                                                                          \
    (const void* sym, const void* src, size_t n, size_t off, cudaMemcpyKind k, cudaStream_t s),                      \
    (sym, src, n, off, k, s), (copy(sym, src, n, k, s, true)))                                                       \
  X(cudaError_t, cudaMemcpyToSymbolAsync_ptsz, P,                                                                     \
    (const void* sym, const void* src, size_t n, size_t off, cudaMemcpyKind k, cudaStream_t s),                      \
    (sym, src, n, off, k, s), (copy(sym, src, n, k, s, true)))                                                       \
  X(cudaError_t, cudaMemcpyFromSymbolAsync, 0,                                                                        \
    (void* dst, const void* sym, size_t n, size_t off, cudaMemcpyKind k, cudaStream_t s),                            \
    (dst, sym, n, off, k, s), (copy(dst, sym, n, k, s, true)))                                                       \
  X(cudaError_t, cudaMemcpyFromSymbolAsync_ptsz, P,                                                                   \
    (void* dst, const void* sym, size_t n, size_t off, cudaMemcpyKind k, cudaStream_t s),                            \
    (dst, sym, n, off, k, s), (copy(dst, sym, n, k, s, true)))                                                       \
  X(cudaError_t, cudaMemcpyPeer, 0, (void* dst, int dd, const void* src, int sd, size_t n), (dst, dd, src, sd, n),   \
    (copy(dst, src, n, 5, nullptr, false)))                                                                          \
  X(cudaError_t, cudaMemcpyPeer_ptds, P, (void* dst, int dd, const void* src, int sd, size_t n),                     \
    (dst, dd, src, sd, n), (copy(dst, src, n, 5, nullptr, false)))                                                   \
  X(cudaError_t, cudaMemcpyPeerAsync, 0, (void* dst, int dd, const void* src, int sd, size_t n, cudaStream_t s),     \
    (dst, dd, src, sd, n, s), (copy(dst, src, n, 5, s, true)))                                                       \
  X(cudaError_t, cudaMemcpyPeerAsync_ptsz, P,                                                                         \
    (void* dst, int dd, const void* src, int sd, size_t n, cudaStream_t s), (dst, dd, src, sd, n, s),                \
    (copy(dst, src, n, 5, s, true)))                                                                                 \
  X(cudaError_t, cudaMemcpyBatchAsync, 0, GPUSCOPE_BATCH, (dsts, srcs, sizes, count, attrs, idxs, nattrs, a8, a9),  \
    (batch(dsts, srcs, sizes, count, a8, a9, slot, reinterpret_cast<void*>(real))))                                 \
  X(cudaError_t, cudaMemcpyBatchAsync_ptsz, P, GPUSCOPE_BATCH,                                                       \
    (dsts, srcs, sizes, count, attrs, idxs, nattrs, a8, a9),                                                         \
    (batch(dsts, srcs, sizes, count, a8, a9, slot, reinterpret_cast<void*>(real))))                                 \
  X(cudaError_t, cudaMemcpy3DBatchAsync, 0, GPUSCOPE_BATCH_3D, (n, ops, a3, a4, a5),                                 \
    (batch_3d(n, ops, a4, a5, slot, reinterpret_cast<void*>(real))))                                                       \
  X(cudaError_t, cudaMemcpy3DBatchAsync_ptsz, P, GPUSCOPE_BATCH_3D, (n, ops, a3, a4, a5),                            \
    (batch_3d(n, ops, a4, a5, slot, reinterpret_cast<void*>(real))))                                                       \
  X(cudaError_t, cudaMemcpyToArray, 0, GPUSCOPE_TO_ARRAY, (a, wo, ho, src, n, k), (copy(a, src, n, k, nullptr, false))) \
  X(cudaError_t, cudaMemcpyToArray_ptds, P, GPUSCOPE_TO_ARRAY, (a, wo, ho, src, n, k),                                \
    (copy(a, src, n, k, nullptr, false)))                                                                            \
  X(cudaError_t, cudaMemcpyFromArray, 0, GPUSCOPE_FROM_ARRAY, (dst, a, wo, ho, n, k),                                 \
    (copy(dst, a, n, k, nullptr, false)))                                                                            \
  X(cudaError_t, cudaMemcpyFromArray_ptds, P, GPUSCOPE_FROM_ARRAY, (dst, a, wo, ho, n, k),                            \
    (copy(dst, a, n, k, nullptr, false)))                                                                            \
  X(cudaError_t, cudaMemcpyArrayToArray, 0, GPUSCOPE_ARRAY_TO_ARRAY, (d, dwo, dho, a, wo, ho, n, k),                  \
    (copy(d, a, n, k, nullptr, false)))                                                                              \
  X(cudaError_t, cudaMemcpyArrayToArray_ptds, P, GPUSCOPE_ARRAY_TO_ARRAY, (d, dwo, dho, a, wo, ho, n, k),             \
    (copy(d, a, n, k, nullptr, false)))                                                                              \
  X(cudaError_t, cudaMemcpyToArrayAsync, 0, GPUSCOPE_TO_ARRAY_ASYNC, (a, wo, ho, src, n, k, s),                       \
    (copy(a, src, n, k, s, true)))                                                                                   \
  X(cudaError_t, cudaMemcpyToArrayAsync_ptsz, P, GPUSCOPE_TO_ARRAY_ASYNC, (a, wo, ho, src, n, k, s),                  \
    (copy(a, src, n, k, s, true)))                                                                                   \
  X(cudaError_t, cudaMemcpyFromArrayAsync, 0, GPUSCOPE_FROM_ARRAY_ASYNC, (dst, a, wo, ho, n, k, s),                   \
    (copy(dst, a, n, k, s, true)))                                                                                   \
  X(cudaError_t, cudaMemcpyFromArrayAsync_ptsz, P, GPUSCOPE_FROM_ARRAY_ASYNC, (dst, a, wo, ho, n, k, s),              \
    (copy(dst, a, n, k, s, true)))

GPUSCOPE_DEFINE_RUNTIME_FAMILY(GPUSCOPE_RUNTIME_COPIES, runtime_copy_hooks)
