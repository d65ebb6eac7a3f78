// CUDA runtime memsets, with their per-thread default stream variants.
#include <cuda_runtime_api.h>

#include "call_info.h"
#include "hook_support.h"

namespace {
using gpuscope::hooks::memset_of;
constexpr uint8_t P = gpuscope::hooks::kPerThreadStream;
uint64_t volume(cudaExtent e) { return uint64_t{e.width} * e.height * e.depth; }
}  // namespace

#define GPUSCOPE_RUNTIME_MEMSETS(X)                                                                              \
  X(cudaError_t, cudaMemset, 0, (void* p, int v, size_t n), (p, v, n), (memset_of(p, v, n, nullptr, false)))     \
  X(cudaError_t, cudaMemset_ptds, P, (void* p, int v, size_t n), (p, v, n), (memset_of(p, v, n, nullptr, false)))\
  X(cudaError_t, cudaMemsetAsync, 0, (void* p, int v, size_t n, cudaStream_t s), (p, v, n, s),                   \
    (memset_of(p, v, n, s, true)))                                                                               \
  X(cudaError_t, cudaMemsetAsync_ptsz, P, (void* p, int v, size_t n, cudaStream_t s), (p, v, n, s),              \
    (memset_of(p, v, n, s, true)))                                                                               \
  X(cudaError_t, cudaMemset2D, 0, (void* p, size_t pitch, int v, size_t w, size_t h), (p, pitch, v, w, h),       \
    (memset_of(p, v, uint64_t{w} * h, nullptr, false)))                                                         \
  X(cudaError_t, cudaMemset2D_ptds, P, (void* p, size_t pitch, int v, size_t w, size_t h), (p, pitch, v, w, h),  \
    (memset_of(p, v, uint64_t{w} * h, nullptr, false)))                                                         \
  X(cudaError_t, cudaMemset2DAsync, 0, (void* p, size_t pitch, int v, size_t w, size_t h, cudaStream_t s),       \
    (p, pitch, v, w, h, s), (memset_of(p, v, uint64_t{w} * h, s, true)))                                         \
  X(cudaError_t, cudaMemset2DAsync_ptsz, P, (void* p, size_t pitch, int v, size_t w, size_t h, cudaStream_t s),  \
    (p, pitch, v, w, h, s), (memset_of(p, v, uint64_t{w} * h, s, true)))                                         \
  X(cudaError_t, cudaMemset3D, 0, (cudaPitchedPtr p, int v, cudaExtent e), (p, v, e),                            \
    (memset_of(p.ptr, v, volume(e), nullptr, false)))                                                            \
  X(cudaError_t, cudaMemset3D_ptds, P, (cudaPitchedPtr p, int v, cudaExtent e), (p, v, e),                       \
    (memset_of(p.ptr, v, volume(e), nullptr, false)))                                                            \
  X(cudaError_t, cudaMemset3DAsync, 0, (cudaPitchedPtr p, int v, cudaExtent e, cudaStream_t s), (p, v, e, s),    \
    (memset_of(p.ptr, v, volume(e), s, true)))                                                                   \
  X(cudaError_t, cudaMemset3DAsync_ptsz, P, (cudaPitchedPtr p, int v, cudaExtent e, cudaStream_t s),             \
    (p, v, e, s), (memset_of(p.ptr, v, volume(e), s, true)))

GPUSCOPE_DEFINE_RUNTIME_FAMILY(GPUSCOPE_RUNTIME_MEMSETS, runtime_memset_hooks)
