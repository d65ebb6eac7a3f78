// CUDA driver host work on streams and launch planning: stream callbacks,
// host functions and the occupancy calculator.
#include <cuda.h>

#include "hooks/call_info.h"
#include "hooks/hook_support.h"

namespace {
using gpuscope::hooks::plain;
using gpuscope::hooks::stream_work;
constexpr uint8_t D = gpuscope::hooks::kDriverApi;
constexpr uint8_t DP = gpuscope::hooks::kDriverApi | gpuscope::hooks::kPerThreadStream;
}  // namespace

#define GPUSCOPE_CU_POTENTIAL_BLOCK_SIZE                                                                          \
  int *grid, int *block, CUfunction f, CUoccupancyB2DSize smem_of, size_t smem, int limit

#define GPUSCOPE_DRIVER_HOST_WORK(X)                                                                              \
  X(CUresult, cuStreamAddCallback, D, (CUstream s, CUstreamCallback cb, void* data, unsigned f), (s, cb, data, f),\
    (stream_work(s)))                                                                                             \
  X(CUresult, cuStreamAddCallback_ptsz, DP, (CUstream s, CUstreamCallback cb, void* data, unsigned f),            \
    (s, cb, data, f), (stream_work(s)))                                                                           \
  X(CUresult, cuLaunchHostFunc, D, (CUstream s, CUhostFn fn, void* data), (s, fn, data), (stream_work(s)))        \
  X(CUresult, cuLaunchHostFunc_ptsz, DP, (CUstream s, CUhostFn fn, void* data), (s, fn, data), (stream_work(s)))  \
  X(CUresult, cuOccupancyMaxActiveBlocksPerMultiprocessor, D, (int* blocks, CUfunction f, int size, size_t smem), \
    (blocks, f, size, smem), (plain()))                                                                           \
  X(CUresult, cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags, D,                                            \
    (int* blocks, CUfunction f, int size, size_t smem, unsigned fl), (blocks, f, size, smem, fl), (plain()))      \
  X(CUresult, cuOccupancyMaxPotentialBlockSize, D, (GPUSCOPE_CU_POTENTIAL_BLOCK_SIZE),                            \
    (grid, block, f, smem_of, smem, limit), (plain()))                                                            \
  X(CUresult, cuOccupancyMaxPotentialBlockSizeWithFlags, D, (GPUSCOPE_CU_POTENTIAL_BLOCK_SIZE, unsigned fl),      \
    (grid, block, f, smem_of, smem, limit, fl), (plain()))                                                        \
  X(CUresult, cuOccupancyAvailableDynamicSMemPerBlock, D, (size_t * smem, CUfunction f, int blocks, int size),    \
    (smem, f, blocks, size), (plain()))                                                                           \
  X(CUresult, cuOccupancyMaxPotentialClusterSize, D, (int* size, CUfunction f, const CUlaunchConfig* c),          \
    (size, f, c), (plain()))                                                                                      \
  X(CUresult, cuOccupancyMaxActiveClusters, D, (int* n, CUfunction f, const CUlaunchConfig* c), (n, f, c),        \
    (plain()))

GPUSCOPE_DEFINE_FAMILY(GPUSCOPE_DRIVER_HOST_WORK, driver_host_work_hooks)
