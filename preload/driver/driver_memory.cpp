// CUDA driver memory placement: stream-ordered memory pools, managed-memory
// prefetch and advice, stream attachment, and peer access between contexts.
// Exact exported variants (cuMemPrefetchAsync_v2, cuMemAdvise_v2), as
// cuGetProcAddress hands them out to CUDA 12/13 callers.
#include <cuda.h>

#include "hooks/call_info.h"
#include "hooks/hook_support.h"

namespace {

using gpuscope::hooks::plain;
using gpuscope::hooks::prefetches;
using gpuscope::hooks::stream_work;
constexpr uint8_t D = gpuscope::hooks::kDriverApi;
constexpr uint8_t DP = gpuscope::hooks::kDriverApi | gpuscope::hooks::kPerThreadStream;
constexpr int kToDevice = CU_MEM_LOCATION_TYPE_DEVICE;

}  // namespace

#define GPUSCOPE_CU_PREFETCH_BATCH                                                                                    \
  (CUdeviceptr * p, size_t * sizes, size_t n, CUmemLocation * to, size_t * idx, size_t nto, unsigned long long f,     \
   CUstream s)

#define GPUSCOPE_DRIVER_MEMORY(X)                                                                                     \
  X(CUresult, cuMemPoolCreate, D, (CUmemoryPool * pool, const CUmemPoolProps* props), (pool, props), (plain()))       \
  X(CUresult, cuMemPoolDestroy, D, (CUmemoryPool pool), (pool), (plain()))                                            \
  X(CUresult, cuMemPoolTrimTo, D, (CUmemoryPool pool, size_t keep), (pool, keep), (plain()))                          \
  X(CUresult, cuMemPoolSetAttribute, D, (CUmemoryPool pool, CUmemPool_attribute a, void* v), (pool, a, v),            \
    (plain()))                                                                                                        \
  X(CUresult, cuMemPoolGetAttribute, D, (CUmemoryPool pool, CUmemPool_attribute a, void* v), (pool, a, v),            \
    (plain()))                                                                                                        \
  X(CUresult, cuMemPoolSetAccess, D, (CUmemoryPool pool, const CUmemAccessDesc* d, size_t n), (pool, d, n),           \
    (plain()))                                                                                                        \
  X(CUresult, cuMemPoolGetAccess, D, (CUmemAccess_flags * f, CUmemoryPool pool, CUmemLocation* l), (f, pool, l),      \
    (plain()))                                                                                                        \
  X(CUresult, cuMemPoolExportToShareableHandle, D,                                                                    \
    (void* h, CUmemoryPool pool, CUmemAllocationHandleType t, unsigned long long f), (h, pool, t, f), (plain()))      \
  X(CUresult, cuMemPoolImportFromShareableHandle, D,                                                                  \
    (CUmemoryPool * pool, void* h, CUmemAllocationHandleType t, unsigned long long f), (pool, h, t, f), (plain()))    \
  X(CUresult, cuMemPoolExportPointer, D, (CUmemPoolPtrExportData * d, CUdeviceptr p), (d, p), (plain()))              \
  X(CUresult, cuMemPoolImportPointer, D, (CUdeviceptr * p, CUmemoryPool pool, CUmemPoolPtrExportData* d),             \
    (p, pool, d), (plain()))                                                                                          \
  X(CUresult, cuDeviceGetDefaultMemPool, D, (CUmemoryPool * pool, CUdevice d), (pool, d), (plain()))                  \
  X(CUresult, cuDeviceGetMemPool, D, (CUmemoryPool * pool, CUdevice d), (pool, d), (plain()))                         \
  X(CUresult, cuDeviceSetMemPool, D, (CUdevice d, CUmemoryPool pool), (d, pool), (plain()))                           \
  X(CUresult, cuMemGetDefaultMemPool, D, (CUmemoryPool * pool, CUmemLocation* l, CUmemAllocationType t),              \
    (pool, l, t), (plain()))                                                                                          \
  X(CUresult, cuMemGetMemPool, D, (CUmemoryPool * pool, CUmemLocation* l, CUmemAllocationType t), (pool, l, t),       \
    (plain()))                                                                                                        \
  X(CUresult, cuMemSetMemPool, D, (CUmemLocation * l, CUmemAllocationType t, CUmemoryPool pool), (l, t, pool),        \
    (plain()))                                                                                                        \
  X(CUresult, cuMemPrefetchAsync_v2, D, (CUdeviceptr p, size_t n, CUmemLocation to, unsigned f, CUstream s),          \
    (p, n, to, f, s), (prefetches(&p, &n, 1, &to, 1, kToDevice, s)))                                                  \
  X(CUresult, cuMemPrefetchAsync_v2_ptsz, DP, (CUdeviceptr p, size_t n, CUmemLocation to, unsigned f, CUstream s),    \
    (p, n, to, f, s), (prefetches(&p, &n, 1, &to, 1, kToDevice, s)))                                                  \
  X(CUresult, cuMemPrefetchBatchAsync, D, GPUSCOPE_CU_PREFETCH_BATCH, (p, sizes, n, to, idx, nto, f, s),              \
    (prefetches(p, sizes, n, to, nto, kToDevice, s)))                                                                 \
  X(CUresult, cuMemPrefetchBatchAsync_ptsz, DP, GPUSCOPE_CU_PREFETCH_BATCH, (p, sizes, n, to, idx, nto, f, s),        \
    (prefetches(p, sizes, n, to, nto, kToDevice, s)))                                                                 \
  X(CUresult, cuMemDiscardAndPrefetchBatchAsync, D, GPUSCOPE_CU_PREFETCH_BATCH, (p, sizes, n, to, idx, nto, f, s),    \
    (stream_work(s)))                                                                                                 \
  X(CUresult, cuMemDiscardAndPrefetchBatchAsync_ptsz, DP, GPUSCOPE_CU_PREFETCH_BATCH,                                 \
    (p, sizes, n, to, idx, nto, f, s), (stream_work(s)))                                                              \
  X(CUresult, cuMemAdvise_v2, D, (CUdeviceptr p, size_t n, CUmem_advise a, CUmemLocation l), (p, n, a, l),            \
    (plain()))                                                                                                        \
  X(CUresult, cuStreamAttachMemAsync, D, (CUstream s, CUdeviceptr p, size_t n, unsigned f), (s, p, n, f),             \
    (stream_work(s)))                                                                                                 \
  X(CUresult, cuStreamAttachMemAsync_ptsz, DP, (CUstream s, CUdeviceptr p, size_t n, unsigned f), (s, p, n, f),       \
    (stream_work(s)))                                                                                                 \
  X(CUresult, cuDeviceCanAccessPeer, D, (int* can, CUdevice d, CUdevice peer), (can, d, peer), (plain()))             \
  X(CUresult, cuCtxEnablePeerAccess, D, (CUcontext peer, unsigned f), (peer, f), (plain()))                           \
  X(CUresult, cuCtxDisablePeerAccess, D, (CUcontext peer), (peer), (plain()))

GPUSCOPE_DEFINE_FAMILY(GPUSCOPE_DRIVER_MEMORY, driver_memory_hooks)
