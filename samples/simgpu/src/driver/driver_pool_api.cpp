// Driver API entry points for stream-ordered memory pools.
#include "driver_api.hpp"

using simgpu::drv::Model;
using simgpu::drv::with_model;

namespace {

template <bool PT>
CUresult cuMemAllocFromPoolAsync_impl(CUdeviceptr* dptr, size_t bytes, CUmemoryPool pool, CUstream s) {
  if (!dptr || !pool) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) {
    void* p = nullptr;
    const CUresult r = m.mem_alloc_async(bytes, s, PT, pool, &p);
    if (r == CUDA_SUCCESS) *dptr = reinterpret_cast<CUdeviceptr>(p);
    return r;
  });
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuDeviceGetDefaultMemPool(CUmemoryPool* pool, CUdevice dev) {
  return with_model([&](Model& m) { return m.device_pool(dev, true, pool); });
}

CUresult CUDAAPI cuDeviceGetMemPool(CUmemoryPool* pool, CUdevice dev) {
  return with_model([&](Model& m) { return m.device_pool(dev, false, pool); });
}

CUresult CUDAAPI cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool) {
  return with_model([&](Model& m) { return m.set_device_pool(dev, pool); });
}

CUresult CUDAAPI cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* props) {
  return with_model([&](Model& m) { return m.pool_create(props, pool); });
}

CUresult CUDAAPI cuMemPoolDestroy(CUmemoryPool pool) {
  return with_model([&](Model& m) { return m.pool_destroy(pool); });
}

CUresult CUDAAPI cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  return with_model([&](Model& m) { return m.pool_attribute(pool, attr, value, true); });
}

CUresult CUDAAPI cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  return with_model([&](Model& m) { return m.pool_attribute(pool, attr, value, false); });
}

CUresult CUDAAPI cuMemPoolTrimTo(CUmemoryPool pool, size_t keep) {
  return with_model([&](Model& m) { return m.pool_trim(pool, keep); });
}

CUresult CUDAAPI cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc* descs, size_t count) {
  return with_model([&](Model& m) { return m.pool_set_access(pool, descs, count); });
}

CUresult CUDAAPI cuMemPoolGetAccess(CUmemAccess_flags* flags, CUmemoryPool pool, CUmemLocation* location) {
  return with_model([&](Model& m) { return m.pool_get_access(pool, location, flags); });
}

}  // extern "C"

SIMGPU_DRIVER_DUAL(cuMemAllocFromPoolAsync, _ptsz, (CUdeviceptr * dptr, size_t bytes, CUmemoryPool pool, CUstream s),
                   (dptr, bytes, pool, s))
