// Runtime entry points for memory: allocation, copies, memsets, pointers.
#include "runtime.hpp"

using simgpu::rt::DriverTable;
using simgpu::rt::from_driver;
using simgpu::rt::with_driver;
using simgpu::rt::dptr;
using simgpu::rt::valid_kind;

namespace {

CUresult copy_1d(const DriverTable& d, void* dst, const void* src, size_t n, cudaMemcpyKind kind) {
  switch (kind) {
    case cudaMemcpyHostToDevice: return d.cuMemcpyHtoD(dptr(dst), src, n);
    case cudaMemcpyDeviceToHost: return d.cuMemcpyDtoH(dst, dptr(src), n);
    case cudaMemcpyDeviceToDevice: return d.cuMemcpyDtoD(dptr(dst), dptr(src), n);
    default: return d.cuMemcpy(dptr(dst), dptr(src), n);  // host-to-host and cudaMemcpyDefault
  }
}

CUresult copy_1d_async(const DriverTable& d, void* dst, const void* src, size_t n, cudaMemcpyKind kind,
                       CUstream s) {
  switch (kind) {
    case cudaMemcpyHostToDevice: return d.cuMemcpyHtoDAsync(dptr(dst), src, n, s);
    case cudaMemcpyDeviceToHost: return d.cuMemcpyDtoHAsync(dst, dptr(src), n, s);
    case cudaMemcpyDeviceToDevice: return d.cuMemcpyDtoDAsync(dptr(dst), dptr(src), n, s);
    default: return d.cuMemcpyAsync(dptr(dst), dptr(src), n, s);
  }
}

CUDA_MEMCPY2D describe_2d(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                          cudaMemcpyKind kind) {
  const bool src_host = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyHostToHost;
  const bool dst_host = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyHostToHost;
  const CUmemorytype unified = CU_MEMORYTYPE_UNIFIED;
  CUDA_MEMCPY2D c{};
  c.srcMemoryType = kind == cudaMemcpyDefault ? unified : src_host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
  c.dstMemoryType = kind == cudaMemcpyDefault ? unified : dst_host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
  c.srcHost = src;
  c.srcDevice = dptr(src);
  c.srcPitch = spitch;
  c.dstHost = dst;
  c.dstDevice = dptr(dst);
  c.dstPitch = dpitch;
  c.WidthInBytes = width;
  c.Height = height;
  return c;
}

template <bool PT>
cudaError_t cudaMemcpy_impl(void* dst, const void* src, size_t n, cudaMemcpyKind kind) {
  return with_driver(PT, [&](const DriverTable& d) {
    return valid_kind(kind) ? from_driver(copy_1d(d, dst, src, n, kind)) : cudaErrorInvalidMemcpyDirection;
  });
}

template <bool PT>
cudaError_t cudaMemcpyAsync_impl(void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t s) {
  return with_driver(PT, [&](const DriverTable& d) {
    return valid_kind(kind) ? from_driver(copy_1d_async(d, dst, src, n, kind, s)) : cudaErrorInvalidMemcpyDirection;
  });
}

template <bool PT>
cudaError_t cudaMemcpy2D_impl(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                              cudaMemcpyKind kind) {
  return with_driver(PT, [&](const DriverTable& d) -> cudaError_t {
    if (!valid_kind(kind)) return cudaErrorInvalidMemcpyDirection;
    const CUDA_MEMCPY2D c = describe_2d(dst, dpitch, src, spitch, width, height, kind);
    return from_driver(d.cuMemcpy2D(&c));
  });
}

template <bool PT>
cudaError_t cudaMemcpy2DAsync_impl(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                                   size_t height, cudaMemcpyKind kind, cudaStream_t s) {
  return with_driver(PT, [&](const DriverTable& d) -> cudaError_t {
    if (!valid_kind(kind)) return cudaErrorInvalidMemcpyDirection;
    const CUDA_MEMCPY2D c = describe_2d(dst, dpitch, src, spitch, width, height, kind);
    return from_driver(d.cuMemcpy2DAsync(&c, s));
  });
}

template <bool PT>
cudaError_t cudaMemset_impl(void* p, int value, size_t n) {
  return with_driver(PT, [&](const DriverTable& d) {
    return from_driver(d.cuMemsetD8(dptr(p), static_cast<unsigned char>(value), n));
  });
}

template <bool PT>
cudaError_t cudaMemsetAsync_impl(void* p, int value, size_t n, cudaStream_t s) {
  return with_driver(PT, [&](const DriverTable& d) {
    return from_driver(d.cuMemsetD8Async(dptr(p), static_cast<unsigned char>(value), n, s));
  });
}

template <bool PT>
cudaError_t cudaMallocAsync_impl(void** p, size_t n, cudaStream_t s) {
  return with_driver(PT, [&](const DriverTable& d) -> cudaError_t {
    if (!p) return cudaErrorInvalidValue;
    CUdeviceptr out = 0;
    const cudaError_t e = n ? from_driver(d.cuMemAllocAsync(&out, n, s)) : cudaSuccess;
    *p = reinterpret_cast<void*>(out);
    return e;
  });
}

template <bool PT>
cudaError_t cudaFreeAsync_impl(void* p, cudaStream_t s) {
  return with_driver(PT, [&](const DriverTable& d) { return from_driver(d.cuMemFreeAsync(dptr(p), s)); });
}

}  // namespace

extern "C" {

cudaError_t CUDARTAPI cudaMalloc(void** p, size_t n) {
  return with_driver(false, [&](const DriverTable& d) -> cudaError_t {
    if (!p) return cudaErrorInvalidValue;
    CUdeviceptr out = 0;
    const cudaError_t e = n ? from_driver(d.cuMemAlloc(&out, n)) : cudaSuccess;  // size 0: nullptr, success
    *p = reinterpret_cast<void*>(out);
    return e;
  });
}

cudaError_t CUDARTAPI cudaFree(void* p) {
  return with_driver(false, [&](const DriverTable& d) {
    return p ? from_driver(d.cuMemFree(dptr(p))) : cudaSuccess;
  });
}

cudaError_t CUDARTAPI cudaMallocManaged(void** p, size_t n, unsigned int flags) {
  return with_driver(false, [&](const DriverTable& d) -> cudaError_t {
    if (!p) return cudaErrorInvalidValue;
    CUdeviceptr out = 0;
    const cudaError_t e = from_driver(d.cuMemAllocManaged(&out, n, flags));
    *p = reinterpret_cast<void*>(out);
    return e;
  });
}

cudaError_t CUDARTAPI cudaMallocHost(void** p, size_t n) {
  return with_driver(false, [&](const DriverTable& d) { return from_driver(d.cuMemAllocHost(p, n)); });
}

cudaError_t CUDARTAPI cudaHostAlloc(void** p, size_t n, unsigned int flags) {
  return with_driver(false, [&](const DriverTable& d) { return from_driver(d.cuMemHostAlloc(p, n, flags)); });
}

cudaError_t CUDARTAPI cudaFreeHost(void* p) {
  return with_driver(false, [&](const DriverTable& d) { return p ? from_driver(d.cuMemFreeHost(p)) : cudaSuccess; });
}

cudaError_t CUDARTAPI cudaHostRegister(void* p, size_t n, unsigned int flags) {
  return with_driver(false, [&](const DriverTable& d) { return from_driver(d.cuMemHostRegister(p, n, flags)); });
}

cudaError_t CUDARTAPI cudaHostUnregister(void* p) {
  return with_driver(false, [&](const DriverTable& d) { return from_driver(d.cuMemHostUnregister(p)); });
}

cudaError_t CUDARTAPI cudaHostGetFlags(unsigned int* flags, void* p) {
  return with_driver(false, [&](const DriverTable& d) { return from_driver(d.cuMemHostGetFlags(flags, p)); });
}

cudaError_t CUDARTAPI cudaHostGetDevicePointer(void** dev, void* host, unsigned int flags) {
  return with_driver(false, [&](const DriverTable& d) -> cudaError_t {
    if (!dev) return cudaErrorInvalidValue;
    CUdeviceptr out = 0;
    const cudaError_t e = from_driver(d.cuMemHostGetDevicePointer(&out, host, flags));
    *dev = reinterpret_cast<void*>(out);
    return e;
  });
}

cudaError_t CUDARTAPI cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  return with_driver(false, [&](const DriverTable& d) { return from_driver(d.cuMemGetInfo(free_bytes, total_bytes)); });
}

cudaError_t CUDARTAPI cudaPointerGetAttributes(cudaPointerAttributes* attr, const void* p) {
  return with_driver(false, [&](const DriverTable& d) -> cudaError_t {
    if (!attr) return cudaErrorInvalidValue;
    unsigned type = 0;
    bool managed = false;
    int device = -2;
    if (d.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, dptr(p)) != CUDA_SUCCESS) {
      // Memory the runtime never saw: ordinary pageable host memory.
      *attr = cudaPointerAttributes{cudaMemoryTypeUnregistered, device, nullptr, const_cast<void*>(p)};
      return cudaSuccess;
    }
    d.cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, dptr(p));
    d.cuPointerGetAttribute(&device, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, dptr(p));
    const bool on_device = type == CU_MEMORYTYPE_DEVICE;
    attr->type = managed ? cudaMemoryTypeManaged : on_device ? cudaMemoryTypeDevice : cudaMemoryTypeHost;
    attr->device = device;
    attr->devicePointer = const_cast<void*>(p);
    attr->hostPointer = on_device && !managed ? nullptr : const_cast<void*>(p);
    return cudaSuccess;
  });
}

}  // extern "C"

SIMGPU_RUNTIME_DUAL(cudaMemcpy, _ptds, (void* dst, const void* src, size_t n, cudaMemcpyKind kind),
                    (dst, src, n, kind))
SIMGPU_RUNTIME_DUAL(cudaMemcpyAsync, _ptsz,
                    (void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t s),
                    (dst, src, n, kind, s))
SIMGPU_RUNTIME_DUAL(cudaMemcpy2D, _ptds,
                    (void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                     cudaMemcpyKind kind),
                    (dst, dpitch, src, spitch, width, height, kind))
SIMGPU_RUNTIME_DUAL(cudaMemcpy2DAsync, _ptsz,
                    (void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                     cudaMemcpyKind kind, cudaStream_t s),
                    (dst, dpitch, src, spitch, width, height, kind, s))
SIMGPU_RUNTIME_DUAL(cudaMemset, _ptds, (void* p, int value, size_t n), (p, value, n))
SIMGPU_RUNTIME_DUAL(cudaMemsetAsync, _ptsz, (void* p, int value, size_t n, cudaStream_t s), (p, value, n, s))
SIMGPU_RUNTIME_DUAL(cudaMallocAsync, _ptsz, (void** p, size_t n, cudaStream_t s), (p, n, s))
SIMGPU_RUNTIME_DUAL(cudaFreeAsync, _ptsz, (void* p, cudaStream_t s), (p, s))
