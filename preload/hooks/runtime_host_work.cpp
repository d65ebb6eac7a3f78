// CUDA runtime host work on streams and launch planning: stream callbacks
// and host functions (work the GPU's stream order runs on a CPU thread; a
// capture makes them host nodes), and the occupancy calculator.
#include <cuda_runtime_api.h>

#include "call_info.h"
#include "hook_support.h"

namespace {
using gpuscope::hooks::plain;
using gpuscope::hooks::stream_work;
constexpr uint8_t P = gpuscope::hooks::kPerThreadStream;
}  // namespace

#define GPUSCOPE_RUNTIME_HOST_WORK(X)                                                                             \
  X(cudaError_t, cudaStreamAddCallback, 0, (cudaStream_t s, cudaStreamCallback_t cb, void* data, unsigned f),     \
    (s, cb, data, f), (stream_work(s)))                                                                           \
  X(cudaError_t, cudaStreamAddCallback_ptsz, P, (cudaStream_t s, cudaStreamCallback_t cb, void* data, unsigned f),\
    (s, cb, data, f), (stream_work(s)))                                                                           \
  X(cudaError_t, cudaLaunchHostFunc, 0, (cudaStream_t s, cudaHostFn_t fn, void* data), (s, fn, data),             \
    (stream_work(s)))                                                                                             \
  X(cudaError_t, cudaLaunchHostFunc_ptsz, P, (cudaStream_t s, cudaHostFn_t fn, void* data), (s, fn, data),        \
    (stream_work(s)))                                                                                             \
  X(cudaError_t, cudaOccupancyMaxActiveBlocksPerMultiprocessor, 0,                                                \
    (int* blocks, const void* f, int block_size, size_t smem), (blocks, f, block_size, smem), (plain()))           \
  X(cudaError_t, cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags, 0,                                       \
    (int* blocks, const void* f, int block_size, size_t smem, unsigned fl), (blocks, f, block_size, smem, fl),    \
    (plain()))                                                                                                    \
  X(cudaError_t, cudaOccupancyAvailableDynamicSMemPerBlock, 0,                                                    \
    (size_t * smem, const void* f, int blocks, int block_size), (smem, f, blocks, block_size), (plain()))         \
  X(cudaError_t, cudaOccupancyMaxPotentialClusterSize, 0, (int* size, const void* f, const cudaLaunchConfig_t* c),\
    (size, f, c), (plain()))                                                                                      \
  X(cudaError_t, cudaOccupancyMaxActiveClusters, 0, (int* n, const void* f, const cudaLaunchConfig_t* c),         \
    (n, f, c), (plain()))                                                                                         \
  X(cudaError_t, cudaFuncGetAttributes, 0, (cudaFuncAttributes * a, const void* f), (a, f), (plain()))

GPUSCOPE_DEFINE_RUNTIME_FAMILY(GPUSCOPE_RUNTIME_HOST_WORK, runtime_host_work_hooks)
