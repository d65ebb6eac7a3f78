// Driver API entry points for virtual memory management (model_vmm.cpp).
// Flags are reserved by CUDA and must be 0; shareable handles (IPC) and
// compressible or generic-compression memory are not modeled.
#include "driver_api.hpp"

using simgpu::drv::Model;
using simgpu::drv::with_model;

extern "C" {

CUresult CUDAAPI cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                               CUmemAllocationGranularity_flags option) {
  if (!granularity || (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM && option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
    return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) {
    int dev = 0;
    if (CUresult r = m.vmm_check_prop(prop, &dev)) return r;
    *granularity = Model::vmm_granularity();
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size, const CUmemAllocationProp* prop,
                             unsigned long long flags) {
  if (!prop || flags != 0 || prop->requestedHandleTypes != CU_MEM_HANDLE_TYPE_NONE) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) { return m.vmm_create(size, *prop, handle); });
}

CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle) {
  return with_model([&](Model& m) { return m.vmm_release(handle); });
}

CUresult CUDAAPI cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp* prop,
                                                        CUmemGenericAllocationHandle handle) {
  return with_model([&](Model& m) { return m.vmm_properties(handle, prop); });
}

CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                     unsigned long long flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) { return m.vmm_reserve(size, alignment, addr, ptr); });
}

CUresult CUDAAPI cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  return with_model([&](Model& m) { return m.vmm_free_address(ptr, size); });
}

CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                          unsigned long long flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) { return m.vmm_map(ptr, size, offset, handle); });
}

CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size) {
  return with_model([&](Model& m) { return m.vmm_unmap(ptr, size); });
}

CUresult CUDAAPI cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) {
  return with_model([&](Model& m) { return m.vmm_set_access(ptr, size, desc, count); });
}

}  // extern "C"
