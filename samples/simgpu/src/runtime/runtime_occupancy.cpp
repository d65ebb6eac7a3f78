// Runtime entry points for kernel attributes and the occupancy calculator.
// cudaOccupancyMaxPotentialBlockSize and its variants are templates in
// cuda_runtime.h: they call cudaGetDevice, cudaDeviceGetAttribute,
// cudaFuncGetAttributes and cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags,
// all of which land here.
#include "runtime.hpp"

using simgpu::rt::DriverTable;
using simgpu::rt::from_driver;
using simgpu::rt::with_driver;

namespace {

// Runs f(driver table, CUfunction of `func` on the current device).
template <class F>
cudaError_t with_function(const void* func, F&& f) {
  return with_driver(false, [&](const DriverTable& d) -> cudaError_t {
    CUfunction fn = nullptr;
    if (cudaError_t e = simgpu::rt::kernel_function(d, func, &fn)) return e;
    return f(d, fn);
  });
}

// cudaFuncAttributes' int fields and the driver attribute each one reports.
struct IntAttribute {
  int cudaFuncAttributes::*field;
  CUfunction_attribute attr;
};
constexpr IntAttribute kIntAttributes[] = {
    {&cudaFuncAttributes::maxThreadsPerBlock, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK},
    {&cudaFuncAttributes::numRegs, CU_FUNC_ATTRIBUTE_NUM_REGS},
    {&cudaFuncAttributes::ptxVersion, CU_FUNC_ATTRIBUTE_PTX_VERSION},
    {&cudaFuncAttributes::binaryVersion, CU_FUNC_ATTRIBUTE_BINARY_VERSION},
    {&cudaFuncAttributes::cacheModeCA, CU_FUNC_ATTRIBUTE_CACHE_MODE_CA},
    {&cudaFuncAttributes::maxDynamicSharedSizeBytes, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES},
    {&cudaFuncAttributes::preferredShmemCarveout, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT},
    {&cudaFuncAttributes::clusterDimMustBeSet, CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET},
    {&cudaFuncAttributes::requiredClusterWidth, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH},
    {&cudaFuncAttributes::requiredClusterHeight, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT},
    {&cudaFuncAttributes::requiredClusterDepth, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH},
    {&cudaFuncAttributes::clusterSchedulingPolicyPreference, CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE},
    {&cudaFuncAttributes::nonPortableClusterSizeAllowed, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED}};

struct SizeAttribute {
  size_t cudaFuncAttributes::*field;
  CUfunction_attribute attr;
};
constexpr SizeAttribute kSizeAttributes[] = {
    {&cudaFuncAttributes::sharedSizeBytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES},
    {&cudaFuncAttributes::constSizeBytes, CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES},
    {&cudaFuncAttributes::localSizeBytes, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES}};

}  // namespace

extern "C" {

cudaError_t CUDARTAPI cudaFuncGetAttributes(cudaFuncAttributes* attr, const void* func) {
  if (!attr) return simgpu::rt::record(cudaErrorInvalidValue);
  return with_function(func, [&](const DriverTable& d, CUfunction f) -> cudaError_t {
    *attr = cudaFuncAttributes{};
    for (const IntAttribute& a : kIntAttributes)
      if (cudaError_t e = from_driver(d.cuFuncGetAttribute(&(attr->*a.field), a.attr, f))) return e;
    for (const SizeAttribute& a : kSizeAttributes) {
      int value = 0;
      if (cudaError_t e = from_driver(d.cuFuncGetAttribute(&value, a.attr, f))) return e;
      attr->*a.field = static_cast<size_t>(value);
    }
    return cudaSuccess;
  });
}

// cudaFuncAttribute's values equal CUfunction_attribute's for the settable ones.
cudaError_t CUDARTAPI cudaFuncSetAttribute(const void* func, cudaFuncAttribute attr, int value) {
  return with_function(func, [&](const DriverTable& d, CUfunction f) {
    return from_driver(d.cuFuncSetAttribute(f, static_cast<CUfunction_attribute>(attr), value));
  });
}

cudaError_t CUDARTAPI cudaFuncSetCacheConfig(const void* func, cudaFuncCache config) {
  return with_function(func, [&](const DriverTable& d, CUfunction f) {
    return from_driver(d.cuFuncSetCacheConfig(f, static_cast<CUfunc_cache>(config)));
  });
}

cudaError_t CUDARTAPI cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* blocks, const void* func,
                                                                             int block_size, size_t dynamic_shared,
                                                                             unsigned int flags) {
  return with_function(func, [&](const DriverTable& d, CUfunction f) {
    return from_driver(
        d.cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(blocks, f, block_size, dynamic_shared, flags));
  });
}

cudaError_t CUDARTAPI cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, const void* func, int block_size,
                                                                    size_t dynamic_shared) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(blocks, func, block_size, dynamic_shared,
                                                                cudaOccupancyDefault);
}

cudaError_t CUDARTAPI cudaOccupancyAvailableDynamicSMemPerBlock(size_t* bytes, const void* func, int blocks,
                                                                int block_size) {
  return with_function(func, [&](const DriverTable& d, CUfunction f) {
    return from_driver(d.cuOccupancyAvailableDynamicSMemPerBlock(bytes, f, blocks, block_size));
  });
}

}  // extern "C"
