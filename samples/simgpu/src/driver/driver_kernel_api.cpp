// Driver API entry points for kernel attributes and the occupancy calculator.
#include <algorithm>

#include "driver_api.hpp"

using simgpu::drv::Model;
using simgpu::drv::with_model;

namespace {

bool valid_occupancy_flags(unsigned flags) { return flags <= CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE; }

// The block size with the most resident threads per SM (the largest such
// size on a tie), trying multiples of the warp size downwards from the
// limit, as the CUDA headers' cudaOccupancyMaxPotentialBlockSize does.
CUresult potential_block_size(Model& m, int* min_grid, int* block_size, CUfunction f,
                              CUoccupancyB2DSize dynamic_of, size_t dynamic_shared, int limit) {
  int max_threads = 0, sm_count = 0, per_sm = 0, dev = 0;
  if (CUresult r = m.current_device(&dev)) return r;
  if (CUresult r = m.function_attribute(f, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &max_threads)) return r;
  sm_count = m.desc(dev).sm_count;
  per_sm = m.desc(dev).max_threads_per_sm;
  if (limit <= 0 || limit > max_threads) limit = max_threads;
  constexpr int kWarp = simgpu::drv::sm::kWarpSize;
  int best_size = 0, best_blocks = 0, best_threads = 0;
  for (int aligned = (limit + kWarp - 1) / kWarp * kWarp; aligned > 0; aligned -= kWarp) {
    const int size = std::min(aligned, limit);
    const size_t dynamic = dynamic_of ? dynamic_of(size) : dynamic_shared;
    int blocks = 0;
    if (CUresult r = m.occupancy(f, size, dynamic, &blocks)) return r;
    if (blocks * size > best_threads) {
      best_size = size, best_blocks = blocks, best_threads = blocks * size;
    }
    if (best_threads == per_sm) break;
  }
  *min_grid = best_blocks * sm_count;
  *block_size = best_size;
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuFuncGetAttribute(int* value, CUfunction_attribute attr, CUfunction f) {
  return with_model([&](Model& m) { return m.function_attribute(f, attr, value); });
}

CUresult CUDAAPI cuFuncSetAttribute(CUfunction f, CUfunction_attribute attr, int value) {
  return with_model([&](Model& m) { return m.set_function_attribute(f, attr, value); });
}

// A cache preference is a hint; the model has no L1 to split.
CUresult CUDAAPI cuFuncSetCacheConfig(CUfunction f, CUfunc_cache config) {
  if (config < CU_FUNC_CACHE_PREFER_NONE || config > CU_FUNC_CACHE_PREFER_EQUAL) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) {
    int unused = 0;
    return m.function_attribute(f, CU_FUNC_ATTRIBUTE_NUM_REGS, &unused);
  });
}

CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* blocks, CUfunction f, int block_size,
                                                                      size_t dynamic_shared, unsigned int flags) {
  if (!valid_occupancy_flags(flags)) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) { return m.occupancy(f, block_size, dynamic_shared, blocks); });
}

CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, CUfunction f, int block_size,
                                                             size_t dynamic_shared) {
  return cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(blocks, f, block_size, dynamic_shared, 0);
}

CUresult CUDAAPI cuOccupancyMaxPotentialBlockSizeWithFlags(int* min_grid, int* block_size, CUfunction f,
                                                           CUoccupancyB2DSize dynamic_of, size_t dynamic_shared,
                                                           int limit, unsigned int flags) {
  if (!min_grid || !block_size || !valid_occupancy_flags(flags)) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) {
    return potential_block_size(m, min_grid, block_size, f, dynamic_of, dynamic_shared, limit);
  });
}

CUresult CUDAAPI cuOccupancyMaxPotentialBlockSize(int* min_grid, int* block_size, CUfunction f,
                                                  CUoccupancyB2DSize dynamic_of, size_t dynamic_shared, int limit) {
  return cuOccupancyMaxPotentialBlockSizeWithFlags(min_grid, block_size, f, dynamic_of, dynamic_shared, limit, 0);
}

CUresult CUDAAPI cuOccupancyAvailableDynamicSMemPerBlock(size_t* bytes, CUfunction f, int blocks, int block_size) {
  return with_model([&](Model& m) { return m.occupancy_dynamic_shared(f, blocks, block_size, bytes); });
}

}  // extern "C"
