// Driver API entry points for memory: allocation, copies and memsets, each
// with its per-thread default stream twin where the real driver has one.
#include "driver_api.hpp"

using simgpu::drv::CopyDir;
using simgpu::drv::CopyRequest;
using simgpu::drv::MemKind;
using simgpu::drv::MemsetRequest;
using simgpu::drv::Model;
using simgpu::drv::with_model;

namespace {

void* as_ptr(CUdeviceptr p) { return reinterpret_cast<void*>(static_cast<uintptr_t>(p)); }

CopyRequest linear(CopyDir dir, void* dst, const void* src, size_t bytes, CUstream s, bool pt, bool async) {
  CopyRequest r;
  r.dir = dir;
  r.dst = dst;
  r.src = src;
  r.width = bytes;
  r.dst_pitch = r.src_pitch = bytes;
  r.stream = s;
  r.per_thread = pt;
  r.async = async;
  return r;
}

CUresult run_copy(const CopyRequest& r) {
  return with_model([&](Model& m) { return m.copy(r); });
}

// cuMemcpy/cuMemcpyAsync infer the direction from where the pointers live
// (unified addressing), as cudaMemcpyDefault does.
CUresult unified_copy(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s, bool pt, bool async) {
  return with_model([&](Model& m) {
    simgpu::drv::Allocation a;
    auto on_device = [&](CUdeviceptr p) {
      return m.find_allocation(as_ptr(p), 1, &a) &&
             (a.kind == MemKind::Device || a.kind == MemKind::Managed);
    };
    const bool d = on_device(dst), sdev = on_device(src);
    const CopyDir dir = d && sdev ? CopyDir::DeviceToDevice
                        : d       ? CopyDir::HostToDevice
                        : sdev    ? CopyDir::DeviceToHost
                                  : CopyDir::HostToHost;
    return m.copy(linear(dir, as_ptr(dst), as_ptr(src), bytes, s, pt, async));
  });
}

// A 2D copy is a 3D copy of depth 1.
CUDA_MEMCPY3D as_3d(const CUDA_MEMCPY2D& c) {
  CUDA_MEMCPY3D d{};
  d.srcXInBytes = c.srcXInBytes, d.srcY = c.srcY, d.srcMemoryType = c.srcMemoryType, d.srcHost = c.srcHost;
  d.srcDevice = c.srcDevice, d.srcArray = c.srcArray, d.srcPitch = c.srcPitch;
  d.dstXInBytes = c.dstXInBytes, d.dstY = c.dstY, d.dstMemoryType = c.dstMemoryType, d.dstHost = c.dstHost;
  d.dstDevice = c.dstDevice, d.dstArray = c.dstArray, d.dstPitch = c.dstPitch;
  d.WidthInBytes = c.WidthInBytes, d.Height = c.Height, d.Depth = 1;
  return d;
}

CUresult copy_2d(const CUDA_MEMCPY2D* c, CUstream s, bool pt, bool async) {
  if (!c) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) { return m.copy_3d(as_3d(*c), s, pt, async); });
}

CUresult copy_3d(const CUDA_MEMCPY3D* c, CUstream s, bool pt, bool async) {
  if (!c) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) { return m.copy_3d(*c, s, pt, async); });
}

// The linear array copies: n bytes from a byte offset into an array, its
// rows end to end; null for a handle of no array, which the copy refuses.
char* in_array(CUarray a, size_t offset) {
  char* base = nullptr;
  with_model([&](Model& m) {
    base = m.array_memory(a);
    return CUDA_SUCCESS;
  });
  return base != nullptr ? base + offset : nullptr;
}

CUresult array_copy(CopyDir dir, void* dst, bool dst_array, const void* src, bool src_array, size_t n, CUstream s,
                    bool pt, bool async) {
  CopyRequest r = linear(dir, dst, src, n, s, pt, async);
  r.dst_array = dst_array;
  r.src_array = src_array;
  return run_copy(r);
}

CUresult memset_2d(CUdeviceptr dst, size_t pitch, unsigned value, unsigned elem, size_t width, size_t height,
                   CUstream s, bool pt, bool async) {
  MemsetRequest r;
  r.dst = as_ptr(dst);
  r.value = value;
  r.elem_size = elem;
  r.width = width;
  r.height = height;
  r.pitch = pitch;
  r.stream = s;
  r.per_thread = pt;
  r.async = async;
  return with_model([&](Model& m) { return m.memset(r); });
}

CUresult memset_n(CUdeviceptr dst, unsigned value, unsigned elem, size_t n, CUstream s, bool pt, bool async) {
  return memset_2d(dst, n * elem, value, elem, n, 1, s, pt, async);
}

template <bool PT>
CUresult cuMemcpyHtoD_v2_impl(CUdeviceptr dst, const void* src, size_t bytes) {
  return run_copy(linear(CopyDir::HostToDevice, as_ptr(dst), src, bytes, nullptr, PT, false));
}
template <bool PT>
CUresult cuMemcpyDtoH_v2_impl(void* dst, CUdeviceptr src, size_t bytes) {
  return run_copy(linear(CopyDir::DeviceToHost, dst, as_ptr(src), bytes, nullptr, PT, false));
}
template <bool PT>
CUresult cuMemcpyDtoD_v2_impl(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  return run_copy(linear(CopyDir::DeviceToDevice, as_ptr(dst), as_ptr(src), bytes, nullptr, PT, false));
}
template <bool PT>
CUresult cuMemcpyHtoDAsync_v2_impl(CUdeviceptr dst, const void* src, size_t bytes, CUstream s) {
  return run_copy(linear(CopyDir::HostToDevice, as_ptr(dst), src, bytes, s, PT, true));
}
template <bool PT>
CUresult cuMemcpyDtoHAsync_v2_impl(void* dst, CUdeviceptr src, size_t bytes, CUstream s) {
  return run_copy(linear(CopyDir::DeviceToHost, dst, as_ptr(src), bytes, s, PT, true));
}
template <bool PT>
CUresult cuMemcpyDtoDAsync_v2_impl(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s) {
  return run_copy(linear(CopyDir::DeviceToDevice, as_ptr(dst), as_ptr(src), bytes, s, PT, true));
}
template <bool PT>
CUresult cuMemcpy_impl(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  return unified_copy(dst, src, bytes, nullptr, PT, false);
}
template <bool PT>
CUresult cuMemcpyAsync_impl(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s) {
  return unified_copy(dst, src, bytes, s, PT, true);
}
template <bool PT>
CUresult cuMemcpy2D_v2_impl(const CUDA_MEMCPY2D* c) {
  return copy_2d(c, nullptr, PT, false);
}
template <bool PT>
CUresult cuMemcpy2DUnaligned_v2_impl(const CUDA_MEMCPY2D* c) {
  return copy_2d(c, nullptr, PT, false);
}
template <bool PT>
CUresult cuMemcpy2DAsync_v2_impl(const CUDA_MEMCPY2D* c, CUstream s) {
  return copy_2d(c, s, PT, true);
}
template <bool PT>
CUresult cuMemcpy3D_v2_impl(const CUDA_MEMCPY3D* c) {
  return copy_3d(c, nullptr, PT, false);
}
template <bool PT>
CUresult cuMemcpy3DAsync_v2_impl(const CUDA_MEMCPY3D* c, CUstream s) {
  return copy_3d(c, s, PT, true);
}
template <bool PT>
CUresult cuMemcpyHtoA_v2_impl(CUarray dst, size_t offset, const void* src, size_t n) {
  return array_copy(CopyDir::HostToDevice, in_array(dst, offset), true, src, false, n, nullptr, PT, false);
}
template <bool PT>
CUresult cuMemcpyAtoH_v2_impl(void* dst, CUarray src, size_t offset, size_t n) {
  return array_copy(CopyDir::DeviceToHost, dst, false, in_array(src, offset), true, n, nullptr, PT, false);
}
template <bool PT>
CUresult cuMemcpyHtoAAsync_v2_impl(CUarray dst, size_t offset, const void* src, size_t n, CUstream s) {
  return array_copy(CopyDir::HostToDevice, in_array(dst, offset), true, src, false, n, s, PT, true);
}
template <bool PT>
CUresult cuMemcpyAtoHAsync_v2_impl(void* dst, CUarray src, size_t offset, size_t n, CUstream s) {
  return array_copy(CopyDir::DeviceToHost, dst, false, in_array(src, offset), true, n, s, PT, true);
}
template <bool PT>
CUresult cuMemcpyAtoA_v2_impl(CUarray dst, size_t dst_offset, CUarray src, size_t src_offset, size_t n) {
  return array_copy(CopyDir::DeviceToDevice, in_array(dst, dst_offset), true, in_array(src, src_offset), true, n,
                    nullptr, PT, false);
}
template <bool PT>
CUresult cuMemcpyDtoA_v2_impl(CUarray dst, size_t offset, CUdeviceptr src, size_t n) {
  return array_copy(CopyDir::DeviceToDevice, in_array(dst, offset), true, as_ptr(src), false, n, nullptr, PT, false);
}
template <bool PT>
CUresult cuMemcpyAtoD_v2_impl(CUdeviceptr dst, CUarray src, size_t offset, size_t n) {
  return array_copy(CopyDir::DeviceToDevice, as_ptr(dst), false, in_array(src, offset), true, n, nullptr, PT, false);
}
template <bool PT>
CUresult cuMemsetD2D8_v2_impl(CUdeviceptr dst, size_t pitch, unsigned char v, size_t width, size_t height) {
  return memset_2d(dst, pitch, v, 1, width, height, nullptr, PT, false);
}
template <bool PT>
CUresult cuMemsetD2D16_v2_impl(CUdeviceptr dst, size_t pitch, unsigned short v, size_t width, size_t height) {
  return memset_2d(dst, pitch, v, 2, width, height, nullptr, PT, false);
}
template <bool PT>
CUresult cuMemsetD2D32_v2_impl(CUdeviceptr dst, size_t pitch, unsigned v, size_t width, size_t height) {
  return memset_2d(dst, pitch, v, 4, width, height, nullptr, PT, false);
}
template <bool PT>
CUresult cuMemsetD2D8Async_impl(CUdeviceptr dst, size_t pitch, unsigned char v, size_t width, size_t height,
                                CUstream s) {
  return memset_2d(dst, pitch, v, 1, width, height, s, PT, true);
}
template <bool PT>
CUresult cuMemsetD2D16Async_impl(CUdeviceptr dst, size_t pitch, unsigned short v, size_t width, size_t height,
                                 CUstream s) {
  return memset_2d(dst, pitch, v, 2, width, height, s, PT, true);
}
template <bool PT>
CUresult cuMemsetD2D32Async_impl(CUdeviceptr dst, size_t pitch, unsigned v, size_t width, size_t height,
                                 CUstream s) {
  return memset_2d(dst, pitch, v, 4, width, height, s, PT, true);
}
template <bool PT>
CUresult cuMemsetD8_v2_impl(CUdeviceptr dst, unsigned char v, size_t n) {
  return memset_n(dst, v, 1, n, nullptr, PT, false);
}
template <bool PT>
CUresult cuMemsetD16_v2_impl(CUdeviceptr dst, unsigned short v, size_t n) {
  return memset_n(dst, v, 2, n, nullptr, PT, false);
}
template <bool PT>
CUresult cuMemsetD32_v2_impl(CUdeviceptr dst, unsigned v, size_t n) {
  return memset_n(dst, v, 4, n, nullptr, PT, false);
}
template <bool PT>
CUresult cuMemsetD8Async_impl(CUdeviceptr dst, unsigned char v, size_t n, CUstream s) {
  return memset_n(dst, v, 1, n, s, PT, true);
}
template <bool PT>
CUresult cuMemsetD16Async_impl(CUdeviceptr dst, unsigned short v, size_t n, CUstream s) {
  return memset_n(dst, v, 2, n, s, PT, true);
}
template <bool PT>
CUresult cuMemsetD32Async_impl(CUdeviceptr dst, unsigned v, size_t n, CUstream s) {
  return memset_n(dst, v, 4, n, s, PT, true);
}
template <bool PT>
CUresult cuMemAllocAsync_impl(CUdeviceptr* dptr, size_t bytes, CUstream s) {
  if (!dptr) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) {
    void* p = nullptr;
    CUresult r = m.mem_alloc_async(bytes, s, PT, nullptr, &p);
    if (r == CUDA_SUCCESS) *dptr = reinterpret_cast<CUdeviceptr>(p);
    return r;
  });
}
template <bool PT>
CUresult cuMemFreeAsync_impl(CUdeviceptr p, CUstream s) {
  return with_model([&](Model& m) { return m.mem_free_async(as_ptr(p), s, PT); });
}

CUresult alloc_device(CUdeviceptr* dptr, size_t bytes, MemKind kind, unsigned flags) {
  if (!dptr) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) {
    void* p = nullptr;
    CUresult r = m.mem_alloc(bytes, kind, flags, &p);
    if (r == CUDA_SUCCESS) *dptr = reinterpret_cast<CUdeviceptr>(p);
    return r;
  });
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytes) { return alloc_device(dptr, bytes, MemKind::Device, 0); }

CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr* dptr, size_t bytes, unsigned int flags) {
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST) return CUDA_ERROR_INVALID_VALUE;
  return alloc_device(dptr, bytes, MemKind::Managed, flags);
}

// Rows are padded to 512 bytes, the pitch real GPUs hand out.
CUresult CUDAAPI cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pitch, size_t width, size_t height,
                                    unsigned int element_size) {
  if (!dptr || (element_size != 4 && element_size != 8 && element_size != 16)) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) {
    void* p = nullptr;
    CUresult r = m.mem_alloc_pitch(width, height, &p, pitch);
    if (r == CUDA_SUCCESS) *dptr = reinterpret_cast<CUdeviceptr>(p);
    return r;
  });
}

CUresult CUDAAPI cuMemFree_v2(CUdeviceptr p) {
  return with_model([&](Model& m) { return m.mem_free(as_ptr(p), simgpu::drv::FreeOf::Device); });
}

CUresult CUDAAPI cuMemHostAlloc(void** pp, size_t bytes, unsigned int flags) {
  if (!pp) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) { return m.mem_alloc(bytes, MemKind::HostPinned, flags, pp); });
}

CUresult CUDAAPI cuMemAllocHost_v2(void** pp, size_t bytes) { return cuMemHostAlloc(pp, bytes, 0); }

CUresult CUDAAPI cuMemFreeHost(void* p) {
  return with_model([&](Model& m) { return m.mem_free(p, simgpu::drv::FreeOf::Host); });
}

CUresult CUDAAPI cuMemHostRegister_v2(void* p, size_t bytes, unsigned int flags) {
  return with_model([&](Model& m) { return m.host_register(p, bytes, flags); });
}

CUresult CUDAAPI cuMemHostUnregister(void* p) {
  return with_model([&](Model& m) { return m.host_unregister(p); });
}

CUresult CUDAAPI cuMemHostGetFlags(unsigned int* flags, void* p) {
  return with_model([&](Model& m) { return m.host_flags(p, flags); });
}

// Pinned host memory is reachable from the device at the same address.
CUresult CUDAAPI cuMemHostGetDevicePointer_v2(CUdeviceptr* dptr, void* p, unsigned int flags) {
  if (!dptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) {
    unsigned host_flags = 0;
    if (CUresult r = m.host_flags(p, &host_flags)) return r;
    *dptr = reinterpret_cast<CUdeviceptr>(p);
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuMemGetInfo_v2(size_t* free_bytes, size_t* total_bytes) {
  if (!free_bytes || !total_bytes) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) { return m.mem_info(free_bytes, total_bytes); });
}

CUresult CUDAAPI cuPointerGetAttribute(void* data, CUpointer_attribute attr, CUdeviceptr p) {
  return with_model([&](Model& m) { return m.pointer_attribute(data, attr, p); });
}

}  // extern "C"

SIMGPU_DRIVER_DUAL(cuMemcpyHtoD_v2, _ptds, (CUdeviceptr dst, const void* src, size_t n), (dst, src, n))
SIMGPU_DRIVER_DUAL(cuMemcpyDtoH_v2, _ptds, (void* dst, CUdeviceptr src, size_t n), (dst, src, n))
SIMGPU_DRIVER_DUAL(cuMemcpyDtoD_v2, _ptds, (CUdeviceptr dst, CUdeviceptr src, size_t n), (dst, src, n))
SIMGPU_DRIVER_DUAL(cuMemcpyHtoDAsync_v2, _ptsz, (CUdeviceptr dst, const void* src, size_t n, CUstream s),
                   (dst, src, n, s))
SIMGPU_DRIVER_DUAL(cuMemcpyDtoHAsync_v2, _ptsz, (void* dst, CUdeviceptr src, size_t n, CUstream s),
                   (dst, src, n, s))
SIMGPU_DRIVER_DUAL(cuMemcpyDtoDAsync_v2, _ptsz, (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s),
                   (dst, src, n, s))
SIMGPU_DRIVER_DUAL(cuMemcpy, _ptds, (CUdeviceptr dst, CUdeviceptr src, size_t n), (dst, src, n))
SIMGPU_DRIVER_DUAL(cuMemcpyAsync, _ptsz, (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s), (dst, src, n, s))
SIMGPU_DRIVER_DUAL(cuMemcpy2D_v2, _ptds, (const CUDA_MEMCPY2D* c), (c))
SIMGPU_DRIVER_DUAL(cuMemcpy2DUnaligned_v2, _ptds, (const CUDA_MEMCPY2D* c), (c))
SIMGPU_DRIVER_DUAL(cuMemcpy2DAsync_v2, _ptsz, (const CUDA_MEMCPY2D* c, CUstream s), (c, s))
SIMGPU_DRIVER_DUAL(cuMemsetD8_v2, _ptds, (CUdeviceptr dst, unsigned char v, size_t n), (dst, v, n))
SIMGPU_DRIVER_DUAL(cuMemsetD16_v2, _ptds, (CUdeviceptr dst, unsigned short v, size_t n), (dst, v, n))
SIMGPU_DRIVER_DUAL(cuMemsetD32_v2, _ptds, (CUdeviceptr dst, unsigned int v, size_t n), (dst, v, n))
SIMGPU_DRIVER_DUAL(cuMemsetD8Async, _ptsz, (CUdeviceptr dst, unsigned char v, size_t n, CUstream s), (dst, v, n, s))
SIMGPU_DRIVER_DUAL(cuMemsetD16Async, _ptsz, (CUdeviceptr dst, unsigned short v, size_t n, CUstream s),
                   (dst, v, n, s))
SIMGPU_DRIVER_DUAL(cuMemsetD32Async, _ptsz, (CUdeviceptr dst, unsigned int v, size_t n, CUstream s), (dst, v, n, s))
SIMGPU_DRIVER_DUAL(cuMemAllocAsync, _ptsz, (CUdeviceptr* dptr, size_t bytes, CUstream s), (dptr, bytes, s))
SIMGPU_DRIVER_DUAL(cuMemFreeAsync, _ptsz, (CUdeviceptr p, CUstream s), (p, s))
SIMGPU_DRIVER_DUAL(cuMemcpy3D_v2, _ptds, (const CUDA_MEMCPY3D* c), (c))
SIMGPU_DRIVER_DUAL(cuMemcpy3DAsync_v2, _ptsz, (const CUDA_MEMCPY3D* c, CUstream s), (c, s))
SIMGPU_DRIVER_DUAL(cuMemsetD2D8_v2, _ptds, (CUdeviceptr dst, size_t pitch, unsigned char v, size_t w, size_t h),
                   (dst, pitch, v, w, h))
SIMGPU_DRIVER_DUAL(cuMemsetD2D16_v2, _ptds, (CUdeviceptr dst, size_t pitch, unsigned short v, size_t w, size_t h),
                   (dst, pitch, v, w, h))
SIMGPU_DRIVER_DUAL(cuMemsetD2D32_v2, _ptds, (CUdeviceptr dst, size_t pitch, unsigned int v, size_t w, size_t h),
                   (dst, pitch, v, w, h))
SIMGPU_DRIVER_DUAL(cuMemsetD2D8Async, _ptsz,
                   (CUdeviceptr dst, size_t pitch, unsigned char v, size_t w, size_t h, CUstream s),
                   (dst, pitch, v, w, h, s))
SIMGPU_DRIVER_DUAL(cuMemsetD2D16Async, _ptsz,
                   (CUdeviceptr dst, size_t pitch, unsigned short v, size_t w, size_t h, CUstream s),
                   (dst, pitch, v, w, h, s))
SIMGPU_DRIVER_DUAL(cuMemsetD2D32Async, _ptsz,
                   (CUdeviceptr dst, size_t pitch, unsigned int v, size_t w, size_t h, CUstream s),
                   (dst, pitch, v, w, h, s))
SIMGPU_DRIVER_DUAL(cuMemcpyHtoA_v2, _ptds, (CUarray dst, size_t offset, const void* src, size_t n),
                   (dst, offset, src, n))
SIMGPU_DRIVER_DUAL(cuMemcpyAtoH_v2, _ptds, (void* dst, CUarray src, size_t offset, size_t n), (dst, src, offset, n))
SIMGPU_DRIVER_DUAL(cuMemcpyHtoAAsync_v2, _ptsz, (CUarray dst, size_t offset, const void* src, size_t n, CUstream s),
                   (dst, offset, src, n, s))
SIMGPU_DRIVER_DUAL(cuMemcpyAtoHAsync_v2, _ptsz, (void* dst, CUarray src, size_t offset, size_t n, CUstream s),
                   (dst, src, offset, n, s))
SIMGPU_DRIVER_DUAL(cuMemcpyAtoA_v2, _ptds, (CUarray dst, size_t dst_offset, CUarray src, size_t src_offset, size_t n),
                   (dst, dst_offset, src, src_offset, n))
SIMGPU_DRIVER_DUAL(cuMemcpyDtoA_v2, _ptds, (CUarray dst, size_t offset, CUdeviceptr src, size_t n),
                   (dst, offset, src, n))
SIMGPU_DRIVER_DUAL(cuMemcpyAtoD_v2, _ptds, (CUdeviceptr dst, CUarray src, size_t offset, size_t n),
                   (dst, src, offset, n))
