// Runtime entry points for stream-ordered memory pools and managed memory.
// cudaMemPool_t is the driver's CUmemoryPool; the attribute, access, advice
// and range attribute enums share the driver's numbering.
#include "runtime.hpp"

using simgpu::rt::DriverTable;
using simgpu::rt::from_driver;
using simgpu::rt::pass;
using simgpu::rt::with_driver;

namespace {

CUmemLocation driver_location(const cudaMemLocation& l) {
  return CUmemLocation{static_cast<CUmemLocationType>(l.type), l.id};
}

template <bool PT>
cudaError_t cudaMallocFromPoolAsync_impl(void** p, size_t bytes, cudaMemPool_t pool, cudaStream_t s) {
  return with_driver(PT, [&](const DriverTable& d) -> cudaError_t {
    if (!p) return cudaErrorInvalidValue;
    CUdeviceptr out = 0;
    const cudaError_t e = from_driver(d.cuMemAllocFromPoolAsync(&out, bytes, pool, s));
    *p = reinterpret_cast<void*>(out);
    return e;
  });
}

template <bool PT>
cudaError_t cudaMemPrefetchAsync_impl(const void* p, size_t count, cudaMemLocation to, unsigned flags,
                                      cudaStream_t s) {
  return with_driver(PT, [&](const DriverTable& d) {
    return from_driver(d.cuMemPrefetchAsync(reinterpret_cast<CUdeviceptr>(p), count, driver_location(to), flags, s));
  });
}

template <bool PT>
cudaError_t cudaStreamAttachMemAsync_impl(cudaStream_t s, void* p, size_t length, unsigned flags) {
  return with_driver(PT, [&](const DriverTable& d) {
    return from_driver(d.cuStreamAttachMemAsync(s, reinterpret_cast<CUdeviceptr>(p), length, flags));
  });
}

}  // namespace

extern "C" {

cudaError_t CUDARTAPI cudaMemAdvise(const void* p, size_t count, cudaMemoryAdvise advice, cudaMemLocation where) {
  return pass([&](const DriverTable& d) {
    return d.cuMemAdvise(reinterpret_cast<CUdeviceptr>(p), count, static_cast<CUmem_advise>(advice),
                         driver_location(where));
  });
}

cudaError_t CUDARTAPI cudaMemRangeGetAttribute(void* data, size_t size, cudaMemRangeAttribute attr, const void* p,
                                               size_t count) {
  return pass([&](const DriverTable& d) {
    return d.cuMemRangeGetAttribute(data, size, static_cast<CUmem_range_attribute>(attr),
                                    reinterpret_cast<CUdeviceptr>(p), count);
  });
}


cudaError_t CUDARTAPI cudaDeviceGetDefaultMemPool(cudaMemPool_t* pool, int device) {
  return pass([&](const DriverTable& d) { return d.cuDeviceGetDefaultMemPool(pool, device); });
}

cudaError_t CUDARTAPI cudaDeviceGetMemPool(cudaMemPool_t* pool, int device) {
  return pass([&](const DriverTable& d) { return d.cuDeviceGetMemPool(pool, device); });
}

cudaError_t CUDARTAPI cudaDeviceSetMemPool(int device, cudaMemPool_t pool) {
  return pass([&](const DriverTable& d) { return d.cuDeviceSetMemPool(device, pool); });
}

cudaError_t CUDARTAPI cudaMemPoolCreate(cudaMemPool_t* pool, const cudaMemPoolProps* props) {
  return with_driver(false, [&](const DriverTable& d) -> cudaError_t {
    if (!props) return cudaErrorInvalidValue;
    CUmemPoolProps p{};
    p.allocType = static_cast<CUmemAllocationType>(props->allocType);
    p.handleTypes = static_cast<CUmemAllocationHandleType>(props->handleTypes);
    p.location = driver_location(props->location);
    p.maxSize = props->maxSize;
    p.usage = props->usage;
    return from_driver(d.cuMemPoolCreate(pool, &p));
  });
}

cudaError_t CUDARTAPI cudaMemPoolDestroy(cudaMemPool_t pool) {
  return pass([&](const DriverTable& d) { return d.cuMemPoolDestroy(pool); });
}

cudaError_t CUDARTAPI cudaMemPoolSetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attr, void* value) {
  return pass([&](const DriverTable& d) {
    return d.cuMemPoolSetAttribute(pool, static_cast<CUmemPool_attribute>(attr), value);
  });
}

cudaError_t CUDARTAPI cudaMemPoolGetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attr, void* value) {
  return pass([&](const DriverTable& d) {
    return d.cuMemPoolGetAttribute(pool, static_cast<CUmemPool_attribute>(attr), value);
  });
}

cudaError_t CUDARTAPI cudaMemPoolTrimTo(cudaMemPool_t pool, size_t keep) {
  return pass([&](const DriverTable& d) { return d.cuMemPoolTrimTo(pool, keep); });
}

// cudaMemAccessDesc and CUmemAccessDesc share their layout.
cudaError_t CUDARTAPI cudaMemPoolSetAccess(cudaMemPool_t pool, const cudaMemAccessDesc* descs, size_t count) {
  return pass([&](const DriverTable& d) {
    return d.cuMemPoolSetAccess(pool, reinterpret_cast<const CUmemAccessDesc*>(descs), count);
  });
}

cudaError_t CUDARTAPI cudaMemPoolGetAccess(cudaMemAccessFlags* flags, cudaMemPool_t pool, cudaMemLocation* location) {
  return with_driver(false, [&](const DriverTable& d) -> cudaError_t {
    if (!location) return cudaErrorInvalidValue;
    CUmemLocation l = driver_location(*location);
    return from_driver(d.cuMemPoolGetAccess(reinterpret_cast<CUmemAccess_flags*>(flags), pool, &l));
  });
}

}  // extern "C"

SIMGPU_RUNTIME_DUAL(cudaMallocFromPoolAsync, _ptsz, (void** p, size_t bytes, cudaMemPool_t pool, cudaStream_t s),
                    (p, bytes, pool, s))
SIMGPU_RUNTIME_DUAL(cudaMemPrefetchAsync, _ptsz,
                    (const void* p, size_t count, cudaMemLocation to, unsigned int flags, cudaStream_t s),
                    (p, count, to, flags, s))
SIMGPU_RUNTIME_DUAL(cudaStreamAttachMemAsync, _ptsz, (cudaStream_t s, void* p, size_t length, unsigned int flags),
                    (s, p, length, flags))
