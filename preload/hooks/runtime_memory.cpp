// CUDA runtime memory placement: stream-ordered memory pools, managed-memory
// prefetch and advice, stream attachment, and peer access between devices.
// Plain ApiCalls with their results, except prefetches, which migrate pages
// over the bus and are recorded as copies (docs/interception.md).
//
// CUDA 12's cudaMemPrefetchAsync was (ptr, count, int device, cudaStream_t),
// and its callers reach this hook too (its alias for libcudart.so.12, or the
// default export): the device arrives where CUDA 13 passes the location,
// the stream where 13 passes the 32-bit `flags`. The hook takes that
// parameter as the whole register, so it goes back to either runtime
// unchanged, and reads both as the caller's release passed them
// (runtime_abi.h); the header's declaration is renamed out of the way.
// CUDA 12.2 to 12.9 also had 13's form, as cudaMemPrefetchAsync_v2.
#define cudaMemPrefetchAsync gpuscope_cuda13_cudaMemPrefetchAsync
#include <cuda_runtime_api.h>
#undef cudaMemPrefetchAsync

#include "call_info.h"
#include "hook_support.h"
#include "runtime_abi.h"

namespace {

using gpuscope::hooks::plain;
using gpuscope::hooks::prefetches;
using gpuscope::hooks::stream_work;
constexpr uint8_t P = gpuscope::hooks::kPerThreadStream;
constexpr int kToDevice = cudaMemLocationTypeDevice;

// One prefetch, its parameters read as the caller's release passed them.
gpuscope::hooks::CopyCall prefetch_of(const gpuscope::hooks::HookSlot& slot, const void* real, const void* p,
                                      size_t n, cudaMemLocation to, uint64_t flags_or_stream, cudaStream_t s) {
  const int major = gpuscope::hooks::caller_cuda_major(slot, real);
  if (major == 0 || major >= 13) return prefetches(&p, &n, 1, &to, 1, kToDevice, s);
  const int device = static_cast<int>(to.type);  // CUDA 12's `int dstDevice`: the location's first word
  const cudaMemLocation old{device == cudaCpuDeviceId ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice, device};
  return prefetches(&p, &n, 1, &old, 1, kToDevice, reinterpret_cast<cudaStream_t>(flags_or_stream));
}

}  // namespace

#define GPUSCOPE_PREFETCH_BATCH_PARAMS                                                                                \
  (void** p, size_t* sizes, size_t n, cudaMemLocation* to, size_t* idx, size_t nto, unsigned long long f,             \
   cudaStream_t s)

#define GPUSCOPE_RUNTIME_MEMORY(X)                                                                                    \
  X(cudaError_t, cudaMemPoolCreate, 0, (cudaMemPool_t* pool, const cudaMemPoolProps* props), (pool, props),           \
    (plain()))                                                                                                        \
  X(cudaError_t, cudaMemPoolDestroy, 0, (cudaMemPool_t pool), (pool), (plain()))                                      \
  X(cudaError_t, cudaMemPoolTrimTo, 0, (cudaMemPool_t pool, size_t keep), (pool, keep), (plain()))                    \
  X(cudaError_t, cudaMemPoolSetAttribute, 0, (cudaMemPool_t pool, cudaMemPoolAttr a, void* v), (pool, a, v),          \
    (plain()))                                                                                                        \
  X(cudaError_t, cudaMemPoolGetAttribute, 0, (cudaMemPool_t pool, cudaMemPoolAttr a, void* v), (pool, a, v),          \
    (plain()))                                                                                                        \
  X(cudaError_t, cudaMemPoolSetAccess, 0, (cudaMemPool_t pool, const cudaMemAccessDesc* d, size_t n),                 \
    (pool, d, n), (plain()))                                                                                          \
  X(cudaError_t, cudaMemPoolGetAccess, 0, (cudaMemAccessFlags * f, cudaMemPool_t pool, cudaMemLocation* l),           \
    (f, pool, l), (plain()))                                                                                          \
  X(cudaError_t, cudaMemPoolExportToShareableHandle, 0,                                                               \
    (void* h, cudaMemPool_t pool, cudaMemAllocationHandleType t, unsigned f), (h, pool, t, f), (plain()))             \
  X(cudaError_t, cudaMemPoolImportFromShareableHandle, 0,                                                             \
    (cudaMemPool_t * pool, void* h, cudaMemAllocationHandleType t, unsigned f), (pool, h, t, f), (plain()))           \
  X(cudaError_t, cudaMemPoolExportPointer, 0, (cudaMemPoolPtrExportData * d, void* p), (d, p), (plain()))             \
  X(cudaError_t, cudaMemPoolImportPointer, 0, (void** p, cudaMemPool_t pool, cudaMemPoolPtrExportData* d),            \
    (p, pool, d), (plain()))                                                                                          \
  X(cudaError_t, cudaDeviceGetDefaultMemPool, 0, (cudaMemPool_t * pool, int d), (pool, d), (plain()))                 \
  X(cudaError_t, cudaDeviceGetMemPool, 0, (cudaMemPool_t * pool, int d), (pool, d), (plain()))                        \
  X(cudaError_t, cudaDeviceSetMemPool, 0, (int d, cudaMemPool_t pool), (d, pool), (plain()))                          \
  X(cudaError_t, cudaMemGetDefaultMemPool, 0, (cudaMemPool_t * pool, cudaMemLocation* l, cudaMemAllocationType t),    \
    (pool, l, t), (plain()))                                                                                          \
  X(cudaError_t, cudaMemGetMemPool, 0, (cudaMemPool_t * pool, cudaMemLocation* l, cudaMemAllocationType t),           \
    (pool, l, t), (plain()))                                                                                          \
  X(cudaError_t, cudaMemSetMemPool, 0, (cudaMemLocation * l, cudaMemAllocationType t, cudaMemPool_t pool),            \
    (l, t, pool), (plain()))                                                                                          \
  X(cudaError_t, cudaMemPrefetchAsync, 0, (const void* p, size_t n, cudaMemLocation to, uint64_t f, cudaStream_t s),  \
    (p, n, to, f, s), (prefetch_of(slot, reinterpret_cast<void*>(real), p, n, to, f, s)))                              \
  X(cudaError_t, cudaMemPrefetchAsync_ptsz, P,                                                                        \
    (const void* p, size_t n, cudaMemLocation to, uint64_t f, cudaStream_t s), (p, n, to, f, s),                      \
    (prefetch_of(slot, reinterpret_cast<void*>(real), p, n, to, f, s)))                                               \
  X(cudaError_t, cudaMemPrefetchAsync_v2, 0,                                                                          \
    (const void* p, size_t n, cudaMemLocation to, unsigned f, cudaStream_t s), (p, n, to, f, s),                      \
    (prefetches(&p, &n, 1, &to, 1, kToDevice, s)))                                                                    \
  X(cudaError_t, cudaMemPrefetchAsync_v2_ptsz, P,                                                                     \
    (const void* p, size_t n, cudaMemLocation to, unsigned f, cudaStream_t s), (p, n, to, f, s),                      \
    (prefetches(&p, &n, 1, &to, 1, kToDevice, s)))                                                                    \
  X(cudaError_t, cudaMemPrefetchBatchAsync, 0, GPUSCOPE_PREFETCH_BATCH_PARAMS, (p, sizes, n, to, idx, nto, f, s),     \
    (prefetches(p, sizes, n, to, nto, kToDevice, s)))                                                                 \
  X(cudaError_t, cudaMemPrefetchBatchAsync_ptsz, P, GPUSCOPE_PREFETCH_BATCH_PARAMS,                                   \
    (p, sizes, n, to, idx, nto, f, s), (prefetches(p, sizes, n, to, nto, kToDevice, s)))                              \
  X(cudaError_t, cudaMemDiscardAndPrefetchBatchAsync, 0, GPUSCOPE_PREFETCH_BATCH_PARAMS,                              \
    (p, sizes, n, to, idx, nto, f, s), (stream_work(s)))                                                              \
  X(cudaError_t, cudaMemDiscardAndPrefetchBatchAsync_ptsz, P, GPUSCOPE_PREFETCH_BATCH_PARAMS,                         \
    (p, sizes, n, to, idx, nto, f, s), (stream_work(s)))                                                              \
  X(cudaError_t, cudaMemAdvise, 0, (const void* p, size_t n, cudaMemoryAdvise a, cudaMemLocation l), (p, n, a, l),    \
    (plain()))                                                                                                        \
  X(cudaError_t, cudaStreamAttachMemAsync, 0, (cudaStream_t s, void* p, size_t n, unsigned f), (s, p, n, f),          \
    (stream_work(s)))                                                                                                 \
  X(cudaError_t, cudaStreamAttachMemAsync_ptsz, P, (cudaStream_t s, void* p, size_t n, unsigned f), (s, p, n, f),     \
    (stream_work(s)))                                                                                                 \
  X(cudaError_t, cudaDeviceCanAccessPeer, 0, (int* can, int d, int peer), (can, d, peer), (plain()))                  \
  X(cudaError_t, cudaDeviceEnablePeerAccess, 0, (int peer, unsigned f), (peer, f), (plain()))                         \
  X(cudaError_t, cudaDeviceDisablePeerAccess, 0, (int peer), (peer), (plain()))

GPUSCOPE_DEFINE_RUNTIME_FAMILY(GPUSCOPE_RUNTIME_MEMORY, runtime_memory_hooks)
