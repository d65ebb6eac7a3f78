// Runtime entry points for CUDA arrays: cudaMallocArray, cudaMalloc3DArray,
// cudaMallocMipmappedArray and their frees, and the copies into, out of and
// between arrays (the 1D ones by byte offset, the 2D ones by rectangle,
// cudaMemcpy3D with an array side). Each maps to the driver call the real
// runtime makes, as do the texture and surface objects over them. Two
// simplifications: a device-to-array or array-to-device
// "Async" 1D copy is the driver's synchronous one (the driver has no async
// form; it never holds the host for long). Batched copies are in
// runtime_batch.cpp.
#include <initializer_list>

#include "../common/array_format.hpp"
#include "runtime.hpp"

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // the 1D array copies are deprecated, still exported

using simgpu::rt::DriverTable;
using simgpu::rt::from_driver;
using simgpu::rt::with_driver;
using simgpu::rt::dptr;
using simgpu::rt::valid_kind;

namespace {

CUarray as_cu(cudaArray_const_t a) { return reinterpret_cast<CUarray>(const_cast<cudaArray_t>(a)); }

struct ChannelFormat {
  cudaChannelFormatKind kind;
  int bits;
  CUarray_format format;
};
constexpr ChannelFormat kChannelFormats[] = {
    {cudaChannelFormatKindUnsigned, 8, CU_AD_FORMAT_UNSIGNED_INT8},
    {cudaChannelFormatKindUnsigned, 16, CU_AD_FORMAT_UNSIGNED_INT16},
    {cudaChannelFormatKindUnsigned, 32, CU_AD_FORMAT_UNSIGNED_INT32},
    {cudaChannelFormatKindSigned, 8, CU_AD_FORMAT_SIGNED_INT8},
    {cudaChannelFormatKindSigned, 16, CU_AD_FORMAT_SIGNED_INT16},
    {cudaChannelFormatKindSigned, 32, CU_AD_FORMAT_SIGNED_INT32},
    {cudaChannelFormatKindFloat, 16, CU_AD_FORMAT_HALF},
    {cudaChannelFormatKindFloat, 32, CU_AD_FORMAT_FLOAT},
};

// The driver format of a channel descriptor: 1, 2 or 4 channels of one
// integer or float size; false for what simgpu does not model.
bool driver_format(const cudaChannelFormatDesc* c, CUarray_format* format, unsigned* channels) {
  if (!c) return false;
  *channels = (c->x > 0) + (c->y > 0) + (c->z > 0) + (c->w > 0);
  for (int bits : {c->y, c->z, c->w})
    if (bits != 0 && bits != c->x) return false;
  if (*channels == 0 || *channels == 3) return false;
  for (const ChannelFormat& f : kChannelFormats)
    if (f.kind == c->f && f.bits == c->x) {
      *format = f.format;
      return true;
    }
  return false;
}

cudaError_t array_descriptor(const cudaChannelFormatDesc* c, cudaExtent e, CUDA_ARRAY3D_DESCRIPTOR* out) {
  *out = CUDA_ARRAY3D_DESCRIPTOR{};
  if (!driver_format(c, &out->Format, &out->NumChannels)) return cudaErrorInvalidChannelDescriptor;
  out->Width = e.width, out->Height = e.height, out->Depth = e.depth;
  return cudaSuccess;
}

// An array's element and row sizes, in bytes.
cudaError_t array_layout(const DriverTable& d, cudaArray_const_t a, size_t* element, size_t* row) {
  CUDA_ARRAY3D_DESCRIPTOR desc{};
  if (CUresult r = d.cuArray3DGetDescriptor(&desc, as_cu(a))) return from_driver(r);
  *element = simgpu::array_channel_bytes(desc.Format) * desc.NumChannels;
  *row = desc.Width * *element;
  return cudaSuccess;
}

// Where a pointer of a copy of this kind lives (cudaMemcpyDefault: asks).
bool on_device(const DriverTable& d, const void* p, cudaMemcpyKind kind, bool source) {
  if (kind != cudaMemcpyDefault)
    return source ? kind == cudaMemcpyDeviceToDevice || kind == cudaMemcpyDeviceToHost
                  : kind == cudaMemcpyDeviceToDevice || kind == cudaMemcpyHostToDevice;
  unsigned type = 0;
  return d.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, dptr(p)) == CUDA_SUCCESS &&
         type == CU_MEMORYTYPE_DEVICE;
}

// One side of a 2D copy: an array at (x bytes, y rows), or memory of a pitch.
struct Side2D {
  cudaArray_const_t array = nullptr;
  const void* ptr = nullptr;
  size_t pitch = 0, x = 0, y = 0;
};

void describe_side(const DriverTable& d, const Side2D& s, cudaMemcpyKind kind, bool source, CUDA_MEMCPY2D* c) {
  const CUmemorytype type = s.array                           ? CU_MEMORYTYPE_ARRAY
                            : on_device(d, s.ptr, kind, source) ? CU_MEMORYTYPE_DEVICE
                                                              : CU_MEMORYTYPE_HOST;
  if (source) {
    c->srcMemoryType = type, c->srcArray = as_cu(s.array), c->srcHost = s.ptr, c->srcDevice = dptr(s.ptr);
    c->srcPitch = s.pitch, c->srcXInBytes = s.x, c->srcY = s.y;
  } else {
    c->dstMemoryType = type, c->dstArray = as_cu(s.array), c->dstHost = const_cast<void*>(s.ptr);
    c->dstDevice = dptr(s.ptr), c->dstPitch = s.pitch, c->dstXInBytes = s.x, c->dstY = s.y;
  }
}

cudaError_t copy_2d(bool per_thread, Side2D dst, Side2D src, size_t width, size_t height, cudaMemcpyKind kind,
                    cudaStream_t s, bool async) {
  return with_driver(per_thread, [&](const DriverTable& d) -> cudaError_t {
    if (!valid_kind(kind)) return cudaErrorInvalidMemcpyDirection;
    CUDA_MEMCPY2D c{};
    describe_side(d, dst, kind, false, &c);
    describe_side(d, src, kind, true, &c);
    c.WidthInBytes = width, c.Height = height;
    return from_driver(async ? d.cuMemcpy2DAsync(&c, s) : d.cuMemcpy2D(&c));
  });
}

// A 1D array copy: n bytes from (x bytes, y rows) of an array, rows end to end.
cudaError_t copy_linear(bool per_thread, Side2D dst, Side2D src, size_t n, cudaMemcpyKind kind, cudaStream_t s,
                        bool async) {
  return with_driver(per_thread, [&](const DriverTable& d) -> cudaError_t {
    if (!valid_kind(kind)) return cudaErrorInvalidMemcpyDirection;
    size_t element = 0, dst_row = 0, src_row = 0;
    if (dst.array)
      if (cudaError_t e = array_layout(d, dst.array, &element, &dst_row)) return e;
    if (src.array)
      if (cudaError_t e = array_layout(d, src.array, &element, &src_row)) return e;
    const size_t dst_at = dst.y * dst_row + dst.x, src_at = src.y * src_row + src.x;
    if (dst.array && src.array) return from_driver(d.cuMemcpyAtoA(as_cu(dst.array), dst_at, as_cu(src.array), src_at, n));
    if (dst.array && on_device(d, src.ptr, kind, true)) return from_driver(d.cuMemcpyDtoA(as_cu(dst.array), dst_at, dptr(src.ptr), n));
    if (dst.array)
      return from_driver(async ? d.cuMemcpyHtoAAsync(as_cu(dst.array), dst_at, src.ptr, n, s)
                               : d.cuMemcpyHtoA(as_cu(dst.array), dst_at, src.ptr, n));
    if (on_device(d, dst.ptr, kind, false)) return from_driver(d.cuMemcpyAtoD(dptr(dst.ptr), as_cu(src.array), src_at, n));
    return from_driver(async ? d.cuMemcpyAtoHAsync(const_cast<void*>(dst.ptr), as_cu(src.array), src_at, n, s)
                             : d.cuMemcpyAtoH(const_cast<void*>(dst.ptr), as_cu(src.array), src_at, n));
  });
}

Side2D in_array(cudaArray_const_t a, size_t x, size_t y) { return Side2D{a, nullptr, 0, x, y}; }
Side2D in_memory(const void* p, size_t pitch = 0) { return Side2D{nullptr, p, pitch, 0, 0}; }

template <bool PT>
cudaError_t cudaMemcpyToArray_impl(cudaArray_t a, size_t x, size_t y, const void* src, size_t n, cudaMemcpyKind k) {
  return copy_linear(PT, in_array(a, x, y), in_memory(src), n, k, nullptr, false);
}
template <bool PT>
cudaError_t cudaMemcpyFromArray_impl(void* dst, cudaArray_const_t a, size_t x, size_t y, size_t n, cudaMemcpyKind k) {
  return copy_linear(PT, in_memory(dst), in_array(a, x, y), n, k, nullptr, false);
}
template <bool PT>
cudaError_t cudaMemcpyArrayToArray_impl(cudaArray_t d, size_t dx, size_t dy, cudaArray_const_t a, size_t x, size_t y,
                                        size_t n, cudaMemcpyKind k) {
  return copy_linear(PT, in_array(d, dx, dy), in_array(a, x, y), n, k, nullptr, false);
}
template <bool PT>
cudaError_t cudaMemcpyToArrayAsync_impl(cudaArray_t a, size_t x, size_t y, const void* src, size_t n, cudaMemcpyKind k,
                                        cudaStream_t s) {
  return copy_linear(PT, in_array(a, x, y), in_memory(src), n, k, s, true);
}
template <bool PT>
cudaError_t cudaMemcpyFromArrayAsync_impl(void* dst, cudaArray_const_t a, size_t x, size_t y, size_t n,
                                          cudaMemcpyKind k, cudaStream_t s) {
  return copy_linear(PT, in_memory(dst), in_array(a, x, y), n, k, s, true);
}
template <bool PT>
cudaError_t cudaMemcpy2DToArray_impl(cudaArray_t a, size_t x, size_t y, const void* src, size_t sp, size_t w, size_t h,
                                     cudaMemcpyKind k) {
  return copy_2d(PT, in_array(a, x, y), in_memory(src, sp), w, h, k, nullptr, false);
}
template <bool PT>
cudaError_t cudaMemcpy2DFromArray_impl(void* dst, size_t dp, cudaArray_const_t a, size_t x, size_t y, size_t w,
                                       size_t h, cudaMemcpyKind k) {
  return copy_2d(PT, in_memory(dst, dp), in_array(a, x, y), w, h, k, nullptr, false);
}
template <bool PT>
cudaError_t cudaMemcpy2DArrayToArray_impl(cudaArray_t d, size_t dx, size_t dy, cudaArray_const_t a, size_t x,
                                          size_t y, size_t w, size_t h, cudaMemcpyKind k) {
  return copy_2d(PT, in_array(d, dx, dy), in_array(a, x, y), w, h, k, nullptr, false);
}
template <bool PT>
cudaError_t cudaMemcpy2DToArrayAsync_impl(cudaArray_t a, size_t x, size_t y, const void* src, size_t sp, size_t w,
                                          size_t h, cudaMemcpyKind k, cudaStream_t s) {
  return copy_2d(PT, in_array(a, x, y), in_memory(src, sp), w, h, k, s, true);
}
template <bool PT>
cudaError_t cudaMemcpy2DFromArrayAsync_impl(void* dst, size_t dp, cudaArray_const_t a, size_t x, size_t y, size_t w,
                                            size_t h, cudaMemcpyKind k, cudaStream_t s) {
  return copy_2d(PT, in_memory(dst, dp), in_array(a, x, y), w, h, k, s, true);
}

// A runtime resource description in the driver's terms; false for a
// resource type or format simgpu does not model.
bool driver_resource(const cudaResourceDesc& r, CUDA_RESOURCE_DESC* out) {
  *out = CUDA_RESOURCE_DESC{};
  switch (r.resType) {
    case cudaResourceTypeArray:
      out->resType = CU_RESOURCE_TYPE_ARRAY, out->res.array.hArray = as_cu(r.res.array.array);
      return true;
    case cudaResourceTypeMipmappedArray:
      out->resType = CU_RESOURCE_TYPE_MIPMAPPED_ARRAY;
      out->res.mipmap.hMipmappedArray = reinterpret_cast<CUmipmappedArray>(r.res.mipmap.mipmap);
      return true;
    case cudaResourceTypeLinear:
      out->resType = CU_RESOURCE_TYPE_LINEAR, out->res.linear.devPtr = dptr(r.res.linear.devPtr);
      out->res.linear.sizeInBytes = r.res.linear.sizeInBytes;
      return driver_format(&r.res.linear.desc, &out->res.linear.format, &out->res.linear.numChannels);
    case cudaResourceTypePitch2D:
      out->resType = CU_RESOURCE_TYPE_PITCH2D, out->res.pitch2D.devPtr = dptr(r.res.pitch2D.devPtr);
      out->res.pitch2D.width = r.res.pitch2D.width, out->res.pitch2D.height = r.res.pitch2D.height;
      out->res.pitch2D.pitchInBytes = r.res.pitch2D.pitchInBytes;
      return driver_format(&r.res.pitch2D.desc, &out->res.pitch2D.format, &out->res.pitch2D.numChannels);
  }
  return false;
}

}  // namespace

// cudaMemcpy3DParms with an array side: positions and the extent's width
// count the array's elements, not bytes.
cudaError_t simgpu::rt::array_copy_3d(const DriverTable& d, const cudaMemcpy3DParms& p, CUDA_MEMCPY3D* out) {
  cudaMemcpy3DParms linear = p;
  linear.srcArray = linear.dstArray = nullptr;
  if (cudaError_t e = to_driver_copy(linear, out)) return e;
  size_t element = 0, row = 0;
  for (cudaArray_const_t a : {static_cast<cudaArray_const_t>(p.srcArray), static_cast<cudaArray_const_t>(p.dstArray)})
    if (a)
      if (cudaError_t e = array_layout(d, a, &element, &row)) return e;
  if (p.srcArray) out->srcMemoryType = CU_MEMORYTYPE_ARRAY, out->srcArray = as_cu(p.srcArray);
  if (p.srcArray) out->srcXInBytes = p.srcPos.x * element;
  if (p.dstArray) out->dstMemoryType = CU_MEMORYTYPE_ARRAY, out->dstArray = as_cu(p.dstArray);
  if (p.dstArray) out->dstXInBytes = p.dstPos.x * element;
  if (element) out->WidthInBytes = p.extent.width * element;
  return cudaSuccess;
}

extern "C" {

cudaChannelFormatDesc CUDARTAPI cudaCreateChannelDesc(int x, int y, int z, int w, cudaChannelFormatKind f) {
  return cudaChannelFormatDesc{x, y, z, w, f};
}

cudaError_t CUDARTAPI cudaMalloc3DArray(cudaArray_t* a, const cudaChannelFormatDesc* c, cudaExtent e, unsigned f) {
  return with_driver(false, [&](const DriverTable& d) -> cudaError_t {
    CUDA_ARRAY3D_DESCRIPTOR desc;
    if (!a) return cudaErrorInvalidValue;
    if (cudaError_t err = array_descriptor(c, e, &desc)) return err;
    desc.Flags = f;
    return from_driver(d.cuArray3DCreate(reinterpret_cast<CUarray*>(a), &desc));
  });
}

cudaError_t CUDARTAPI cudaMallocArray(cudaArray_t* a, const cudaChannelFormatDesc* c, size_t w, size_t h, unsigned f) {
  return cudaMalloc3DArray(a, c, cudaExtent{w, h, 0}, f);
}

cudaError_t CUDARTAPI cudaMallocMipmappedArray(cudaMipmappedArray_t* m, const cudaChannelFormatDesc* c, cudaExtent e,
                                               unsigned levels, unsigned f) {
  return with_driver(false, [&](const DriverTable& d) -> cudaError_t {
    CUDA_ARRAY3D_DESCRIPTOR desc;
    if (!m) return cudaErrorInvalidValue;
    if (cudaError_t err = array_descriptor(c, e, &desc)) return err;
    desc.Flags = f;
    return from_driver(d.cuMipmappedArrayCreate(reinterpret_cast<CUmipmappedArray*>(m), &desc, levels));
  });
}

cudaError_t CUDARTAPI cudaFreeArray(cudaArray_t a) {
  if (!a) return cudaSuccess;
  return simgpu::rt::pass([&](const DriverTable& d) { return d.cuArrayDestroy(as_cu(a)); });
}

cudaError_t CUDARTAPI cudaFreeMipmappedArray(cudaMipmappedArray_t m) {
  if (!m) return cudaSuccess;
  return simgpu::rt::pass(
      [&](const DriverTable& d) { return d.cuMipmappedArrayDestroy(reinterpret_cast<CUmipmappedArray>(m)); });
}

cudaError_t CUDARTAPI cudaGetMipmappedArrayLevel(cudaArray_t* a, cudaMipmappedArray_const_t m, unsigned level) {
  return simgpu::rt::pass([&](const DriverTable& d) {
    return d.cuMipmappedArrayGetLevel(reinterpret_cast<CUarray*>(a),
                                      reinterpret_cast<CUmipmappedArray>(const_cast<cudaMipmappedArray_t>(m)), level);
  });
}

// Filtering, addressing and views do not change what a kernel that
// computes nothing reads: the texture description is checked for presence.
cudaError_t CUDARTAPI cudaCreateTextureObject(cudaTextureObject_t* t, const cudaResourceDesc* r,
                                              const cudaTextureDesc* td, const cudaResourceViewDesc*) {
  return with_driver(false, [&](const DriverTable& d) -> cudaError_t {
    CUDA_RESOURCE_DESC resource;
    if (!t || !r || !td || !driver_resource(*r, &resource)) return cudaErrorInvalidValue;
    const CUDA_TEXTURE_DESC texture{};
    return from_driver(d.cuTexObjectCreate(t, &resource, &texture, nullptr));
  });
}

cudaError_t CUDARTAPI cudaDestroyTextureObject(cudaTextureObject_t t) {
  return simgpu::rt::pass([&](const DriverTable& d) { return d.cuTexObjectDestroy(t); });
}

cudaError_t CUDARTAPI cudaCreateSurfaceObject(cudaSurfaceObject_t* s, const cudaResourceDesc* r) {
  return with_driver(false, [&](const DriverTable& d) -> cudaError_t {
    CUDA_RESOURCE_DESC resource;
    if (!s || !r || !driver_resource(*r, &resource)) return cudaErrorInvalidValue;
    return from_driver(d.cuSurfObjectCreate(s, &resource));
  });
}

cudaError_t CUDARTAPI cudaDestroySurfaceObject(cudaSurfaceObject_t s) {
  return simgpu::rt::pass([&](const DriverTable& d) { return d.cuSurfObjectDestroy(s); });
}

}  // extern "C"

#define SIMGPU_TO_ARRAY (cudaArray_t a, size_t x, size_t y, const void* src, size_t n, cudaMemcpyKind k)
#define SIMGPU_FROM_ARRAY (void* dst, cudaArray_const_t a, size_t x, size_t y, size_t n, cudaMemcpyKind k)
#define SIMGPU_2D_TO_ARRAY \
  (cudaArray_t a, size_t x, size_t y, const void* src, size_t sp, size_t w, size_t h, cudaMemcpyKind k)
#define SIMGPU_2D_FROM_ARRAY \
  (void* dst, size_t dp, cudaArray_const_t a, size_t x, size_t y, size_t w, size_t h, cudaMemcpyKind k)
SIMGPU_RUNTIME_DUAL(cudaMemcpyToArray, _ptds, SIMGPU_TO_ARRAY, (a, x, y, src, n, k))
SIMGPU_RUNTIME_DUAL(cudaMemcpyFromArray, _ptds, SIMGPU_FROM_ARRAY, (dst, a, x, y, n, k))
SIMGPU_RUNTIME_DUAL(cudaMemcpyArrayToArray, _ptds,
                    (cudaArray_t d, size_t dx, size_t dy, cudaArray_const_t a, size_t x, size_t y, size_t n,
                     cudaMemcpyKind k),
                    (d, dx, dy, a, x, y, n, k))
SIMGPU_RUNTIME_DUAL(cudaMemcpyToArrayAsync, _ptsz,
                    (cudaArray_t a, size_t x, size_t y, const void* src, size_t n, cudaMemcpyKind k, cudaStream_t s),
                    (a, x, y, src, n, k, s))
SIMGPU_RUNTIME_DUAL(cudaMemcpyFromArrayAsync, _ptsz,
                    (void* dst, cudaArray_const_t a, size_t x, size_t y, size_t n, cudaMemcpyKind k, cudaStream_t s),
                    (dst, a, x, y, n, k, s))
SIMGPU_RUNTIME_DUAL(cudaMemcpy2DToArray, _ptds, SIMGPU_2D_TO_ARRAY, (a, x, y, src, sp, w, h, k))
SIMGPU_RUNTIME_DUAL(cudaMemcpy2DFromArray, _ptds, SIMGPU_2D_FROM_ARRAY, (dst, dp, a, x, y, w, h, k))
SIMGPU_RUNTIME_DUAL(cudaMemcpy2DArrayToArray, _ptds,
                    (cudaArray_t d, size_t dx, size_t dy, cudaArray_const_t a, size_t x, size_t y, size_t w, size_t h,
                     cudaMemcpyKind k),
                    (d, dx, dy, a, x, y, w, h, k))
SIMGPU_RUNTIME_DUAL(cudaMemcpy2DToArrayAsync, _ptsz,
                    (cudaArray_t a, size_t x, size_t y, const void* src, size_t sp, size_t w, size_t h,
                     cudaMemcpyKind k, cudaStream_t s),
                    (a, x, y, src, sp, w, h, k, s))
SIMGPU_RUNTIME_DUAL(cudaMemcpy2DFromArrayAsync, _ptsz,
                    (void* dst, size_t dp, cudaArray_const_t a, size_t x, size_t y, size_t w, size_t h,
                     cudaMemcpyKind k, cudaStream_t s),
                    (dst, dp, a, x, y, w, h, k, s))
