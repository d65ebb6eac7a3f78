// Device model: kernel attributes and the occupancy calculator.  simgpu
// compiles no device code, so a kernel's registers, static shared memory and
// thread limit come from the node description (defaults: 32 registers, no
// static shared memory, 1024 threads); the SM's limits are Hopper's.  The
// arithmetic is the usual occupancy calculation: the most blocks one SM holds
// at once by threads, registers, shared memory and its block slots.
#include <algorithm>

#include "model.hpp"

namespace simgpu::drv {
namespace {

int round_up(int value, int unit) { return (value + unit - 1) / unit * unit; }

}  // namespace

FunctionResources function_resources(const CUfunc_st& f) {
  FunctionResources r;
  const KernelCost& c = f.cost;
  if (c.registers >= 0) r.registers = c.registers;
  if (c.shared_bytes >= 0) r.shared_bytes = c.shared_bytes;
  if (c.local_bytes >= 0) r.local_bytes = c.local_bytes;
  if (c.max_threads_per_block > 0) r.max_threads = c.max_threads_per_block;
  // Static shared memory counts against the default 48 KiB a block may use
  // without opting in; cuFuncSetAttribute raises the dynamic part up to 227 KiB.
  r.max_dynamic_shared = f.max_dynamic_shared >= 0 ? f.max_dynamic_shared
                                                   : std::max(0, sm::kSharedPerBlock - r.shared_bytes);
  return r;
}

int blocks_per_sm(const FunctionResources& r, int max_threads_per_sm, int block_size, size_t dynamic_shared) {
  if (block_size <= 0 || block_size > r.max_threads) return 0;
  if (dynamic_shared > static_cast<size_t>(r.max_dynamic_shared)) return 0;
  const int warps_per_block = (block_size + sm::kWarpSize - 1) / sm::kWarpSize;
  int blocks = std::min(sm::kMaxBlocks, max_threads_per_sm / sm::kWarpSize / warps_per_block);
  if (r.registers > 0) {
    if (r.registers * block_size > sm::kRegisters) return 0;
    const int per_warp = round_up(r.registers * sm::kWarpSize, sm::kRegisterAllocUnit);
    blocks = std::min(blocks, sm::kRegisters / per_warp / warps_per_block);
  }
  const size_t shared = static_cast<size_t>(r.shared_bytes) + dynamic_shared;
  if (shared > static_cast<size_t>(sm::kSharedPerBlockOptin)) return 0;
  const int per_block = round_up(static_cast<int>(shared) + sm::kReservedSharedPerBlock, sm::kSharedAllocUnit);
  return std::max(0, std::min(blocks, sm::kSharedBytes / per_block));
}

CUresult Model::function_attribute(CUfunction f, CUfunction_attribute attr, int* value) {
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(mu_);
  if (!functions_.count(f)) return CUDA_ERROR_INVALID_HANDLE;
  const FunctionResources r = function_resources(*f);
  const int arch = desc(0).cc_major * 10 + desc(0).cc_minor;
  switch (attr) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      // A block cannot use more registers than the SM has.
      *value = r.registers > 0 ? std::min(r.max_threads, sm::kRegisters / r.registers / sm::kWarpSize * sm::kWarpSize)
                               : r.max_threads;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *value = r.shared_bytes; return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: *value = 0; return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *value = r.local_bytes; return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *value = r.registers; return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION:
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *value = arch; return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *value = r.max_dynamic_shared; return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: *value = f->carveout; return CUDA_SUCCESS;
    default:
      if (attr < 0 || attr >= CU_FUNC_ATTRIBUTE_MAX) return CUDA_ERROR_INVALID_VALUE;
      *value = 0;  // caching and cluster attributes: the defaults
      return CUDA_SUCCESS;
  }
}

CUresult Model::set_function_attribute(CUfunction f, CUfunction_attribute attr, int value) {
  std::lock_guard lock(mu_);
  if (!functions_.count(f)) return CUDA_ERROR_INVALID_HANDLE;
  switch (attr) {
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: {
      const int limit = sm::kSharedPerBlockOptin - function_resources(*f).shared_bytes;
      if (value < 0 || value > limit) return CUDA_ERROR_INVALID_VALUE;
      f->max_dynamic_shared = value;
      return CUDA_SUCCESS;
    }
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
      if (value < -1 || value > 100) return CUDA_ERROR_INVALID_VALUE;
      f->carveout = value;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
      return CUDA_SUCCESS;  // accepted; simgpu launches no clusters
    default:
      return CUDA_ERROR_INVALID_VALUE;  // read-only or unknown
  }
}

CUresult Model::occupancy(CUfunction f, int block_size, size_t dynamic_shared, int* blocks) {
  if (!blocks || block_size <= 0) return CUDA_ERROR_INVALID_VALUE;
  int dev = 0;
  if (CUresult r = current_device(&dev)) return r;
  std::lock_guard lock(mu_);
  if (!functions_.count(f)) return CUDA_ERROR_INVALID_HANDLE;
  *blocks = blocks_per_sm(function_resources(*f), desc(dev).max_threads_per_sm, block_size, dynamic_shared);
  return CUDA_SUCCESS;
}

CUresult Model::occupancy_dynamic_shared(CUfunction f, int blocks, int block_size, size_t* bytes) {
  if (!bytes || blocks <= 0 || block_size <= 0) return CUDA_ERROR_INVALID_VALUE;
  int dev = 0;
  if (CUresult r = current_device(&dev)) return r;
  std::lock_guard lock(mu_);
  if (!functions_.count(f)) return CUDA_ERROR_INVALID_HANDLE;
  const FunctionResources res = function_resources(*f);
  // The largest dynamic size, in allocation units, at which `blocks` blocks
  // still fit side by side; 0 when they do not fit even without any.
  const int per_block = sm::kSharedBytes / blocks / sm::kSharedAllocUnit * sm::kSharedAllocUnit;
  int dynamic = std::min(per_block - sm::kReservedSharedPerBlock - res.shared_bytes, res.max_dynamic_shared);
  if (dynamic < 0 || blocks_per_sm(res, desc(dev).max_threads_per_sm, block_size, 0) < blocks) dynamic = 0;
  *bytes = static_cast<size_t>(dynamic);
  return CUDA_SUCCESS;
}

}  // namespace simgpu::drv
