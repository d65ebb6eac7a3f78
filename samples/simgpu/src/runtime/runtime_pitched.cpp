// Runtime entry points for pitched (2D and 3D) memory: cudaMallocPitch,
// cudaMalloc3D, cudaMemcpy3D and cudaMemset2D/3D; cudaMemcpy3D's array sides
// are runtime_arrays.cpp's.
#include "runtime.hpp"

using simgpu::rt::DriverTable;
using simgpu::rt::from_driver;
using simgpu::rt::with_driver;
using simgpu::rt::dptr;

namespace {

// The driver memory type of each side of a copy of this kind.
void memory_types(cudaMemcpyKind kind, CUmemorytype* src, CUmemorytype* dst) {
  const bool src_host = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyHostToHost;
  const bool dst_host = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyHostToHost;
  *src = kind == cudaMemcpyDefault ? CU_MEMORYTYPE_UNIFIED : src_host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
  *dst = kind == cudaMemcpyDefault ? CU_MEMORYTYPE_UNIFIED : dst_host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
}

template <bool PT>
cudaError_t cudaMemcpy3D_impl(const cudaMemcpy3DParms* p) {
  return with_driver(PT, [&](const DriverTable& d) -> cudaError_t {
    if (!p) return cudaErrorInvalidValue;
    CUDA_MEMCPY3D c;
    if (cudaError_t e = simgpu::rt::array_copy_3d(d, *p, &c)) return e;
    return from_driver(d.cuMemcpy3D(&c));
  });
}

template <bool PT>
cudaError_t cudaMemcpy3DAsync_impl(const cudaMemcpy3DParms* p, cudaStream_t s) {
  return with_driver(PT, [&](const DriverTable& d) -> cudaError_t {
    if (!p) return cudaErrorInvalidValue;
    CUDA_MEMCPY3D c;
    if (cudaError_t e = simgpu::rt::array_copy_3d(d, *p, &c)) return e;
    return from_driver(d.cuMemcpy3DAsync(&c, s));
  });
}

// A 3D memset is one 2D memset when its slices follow one another (the
// extent covers whole slices), else one per slice.
cudaError_t memset_3d(const DriverTable& d, cudaPitchedPtr p, int value, cudaExtent e, cudaStream_t s,
                      bool async) {
  const auto byte = static_cast<unsigned char>(value);
  auto rows = [&](CUdeviceptr at, size_t height) {
    return from_driver(async ? d.cuMemsetD2D8Async(at, p.pitch, byte, e.width, height, s)
                             : d.cuMemsetD2D8(at, p.pitch, byte, e.width, height));
  };
  if (e.depth == 1 || e.height == p.ysize) return rows(dptr(p.ptr), e.height * e.depth);
  for (size_t z = 0; z < e.depth; ++z)
    if (cudaError_t err = rows(dptr(static_cast<char*>(p.ptr) + z * p.pitch * p.ysize), e.height)) return err;
  return cudaSuccess;
}

template <bool PT>
cudaError_t cudaMemset2D_impl(void* p, size_t pitch, int value, size_t width, size_t height) {
  return with_driver(PT, [&](const DriverTable& d) {
    return from_driver(d.cuMemsetD2D8(dptr(p), pitch, static_cast<unsigned char>(value), width, height));
  });
}

template <bool PT>
cudaError_t cudaMemset2DAsync_impl(void* p, size_t pitch, int value, size_t width, size_t height, cudaStream_t s) {
  return with_driver(PT, [&](const DriverTable& d) {
    return from_driver(d.cuMemsetD2D8Async(dptr(p), pitch, static_cast<unsigned char>(value), width, height, s));
  });
}

template <bool PT>
cudaError_t cudaMemset3D_impl(cudaPitchedPtr p, int value, cudaExtent e) {
  return with_driver(PT, [&](const DriverTable& d) { return memset_3d(d, p, value, e, nullptr, false); });
}

template <bool PT>
cudaError_t cudaMemset3DAsync_impl(cudaPitchedPtr p, int value, cudaExtent e, cudaStream_t s) {
  return with_driver(PT, [&](const DriverTable& d) { return memset_3d(d, p, value, e, s, true); });
}

}  // namespace

cudaError_t simgpu::rt::to_driver_copy(const cudaMemcpy3DParms& p, CUDA_MEMCPY3D* out) {
  if (p.srcArray || p.dstArray) return cudaErrorNotSupported;
  if (p.kind < cudaMemcpyHostToHost || p.kind > cudaMemcpyDefault) return cudaErrorInvalidMemcpyDirection;
  CUDA_MEMCPY3D c{};
  memory_types(p.kind, &c.srcMemoryType, &c.dstMemoryType);
  c.srcXInBytes = p.srcPos.x, c.srcY = p.srcPos.y, c.srcZ = p.srcPos.z;
  c.srcHost = p.srcPtr.ptr, c.srcDevice = dptr(p.srcPtr.ptr), c.srcPitch = p.srcPtr.pitch;
  c.srcHeight = p.srcPtr.ysize;
  c.dstXInBytes = p.dstPos.x, c.dstY = p.dstPos.y, c.dstZ = p.dstPos.z;
  c.dstHost = p.dstPtr.ptr, c.dstDevice = dptr(p.dstPtr.ptr), c.dstPitch = p.dstPtr.pitch;
  c.dstHeight = p.dstPtr.ysize;
  c.WidthInBytes = p.extent.width, c.Height = p.extent.height, c.Depth = p.extent.depth;
  *out = c;
  return cudaSuccess;
}

cudaMemcpy3DParms simgpu::rt::linear_copy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  cudaMemcpy3DParms p{};
  p.srcPtr = cudaPitchedPtr{const_cast<void*>(src), bytes, bytes, 1};
  p.dstPtr = cudaPitchedPtr{dst, bytes, bytes, 1};
  p.extent = cudaExtent{bytes, 1, 1};
  p.kind = kind;
  return p;
}

extern "C" {

cudaError_t CUDARTAPI cudaMallocPitch(void** p, size_t* pitch, size_t width, size_t height) {
  return with_driver(false, [&](const DriverTable& d) -> cudaError_t {
    if (!p || !pitch) return cudaErrorInvalidValue;
    CUdeviceptr out = 0;
    const cudaError_t e = from_driver(d.cuMemAllocPitch(&out, pitch, width, height, 4));
    *p = reinterpret_cast<void*>(out);
    return e;
  });
}

cudaError_t CUDARTAPI cudaMalloc3D(cudaPitchedPtr* p, cudaExtent extent) {
  return with_driver(false, [&](const DriverTable& d) -> cudaError_t {
    if (!p) return cudaErrorInvalidValue;
    CUdeviceptr out = 0;
    size_t pitch = 0;
    const cudaError_t e = from_driver(d.cuMemAllocPitch(&out, &pitch, extent.width, extent.height * extent.depth, 4));
    *p = cudaPitchedPtr{reinterpret_cast<void*>(out), pitch, extent.width, extent.height};
    return e;
  });
}

}  // extern "C"

SIMGPU_RUNTIME_DUAL(cudaMemcpy3D, _ptds, (const cudaMemcpy3DParms* p), (p))
SIMGPU_RUNTIME_DUAL(cudaMemcpy3DAsync, _ptsz, (const cudaMemcpy3DParms* p, cudaStream_t s), (p, s))
SIMGPU_RUNTIME_DUAL(cudaMemset2D, _ptds, (void* p, size_t pitch, int value, size_t width, size_t height),
                    (p, pitch, value, width, height))
SIMGPU_RUNTIME_DUAL(cudaMemset2DAsync, _ptsz,
                    (void* p, size_t pitch, int value, size_t width, size_t height, cudaStream_t s),
                    (p, pitch, value, width, height, s))
SIMGPU_RUNTIME_DUAL(cudaMemset3D, _ptds, (cudaPitchedPtr p, int value, cudaExtent e), (p, value, e))
SIMGPU_RUNTIME_DUAL(cudaMemset3DAsync, _ptsz, (cudaPitchedPtr p, int value, cudaExtent e, cudaStream_t s),
                    (p, value, e, s))
