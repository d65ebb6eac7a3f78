// Driver API entry points for CUDA arrays, mipmapped arrays and the texture
// and surface objects over them (model_arrays.cpp); the copies into and out of them are with the other
// copies in driver_memory_api.cpp.
#include "driver_api.hpp"

using simgpu::drv::Model;
using simgpu::drv::with_model;

namespace {

CUDA_ARRAY3D_DESCRIPTOR as_3d(const CUDA_ARRAY_DESCRIPTOR& d) {
  CUDA_ARRAY3D_DESCRIPTOR out{};
  out.Width = d.Width, out.Height = d.Height, out.Format = d.Format, out.NumChannels = d.NumChannels;
  return out;
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuArrayCreate_v2(CUarray* out, const CUDA_ARRAY_DESCRIPTOR* d) {
  if (!d) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) { return m.array_create(as_3d(*d), out); });
}

CUresult CUDAAPI cuArray3DCreate_v2(CUarray* out, const CUDA_ARRAY3D_DESCRIPTOR* d) {
  // Layered, cubemap, surface and sparse arrays are not modeled.
  if (!d || d->Flags != 0) return d ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) { return m.array_create(*d, out); });
}

CUresult CUDAAPI cuArrayDestroy(CUarray a) {
  return with_model([&](Model& m) { return m.array_destroy(a); });
}

CUresult CUDAAPI cuArray3DGetDescriptor_v2(CUDA_ARRAY3D_DESCRIPTOR* out, CUarray a) {
  return with_model([&](Model& m) { return m.array_descriptor(a, out); });
}

CUresult CUDAAPI cuArrayGetDescriptor_v2(CUDA_ARRAY_DESCRIPTOR* out, CUarray a) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) {
    CUDA_ARRAY3D_DESCRIPTOR d{};
    if (CUresult r = m.array_descriptor(a, &d)) return r;
    *out = CUDA_ARRAY_DESCRIPTOR{d.Width, d.Height, d.Format, d.NumChannels};
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuMipmappedArrayCreate(CUmipmappedArray* out, const CUDA_ARRAY3D_DESCRIPTOR* d, unsigned levels) {
  if (!d || d->Flags != 0) return d ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) { return m.mipmapped_create(*d, levels, out); });
}

CUresult CUDAAPI cuMipmappedArrayDestroy(CUmipmappedArray m) {
  return with_model([&](Model& model) { return model.mipmapped_destroy(m); });
}

CUresult CUDAAPI cuMipmappedArrayGetLevel(CUarray* out, CUmipmappedArray m, unsigned level) {
  return with_model([&](Model& model) { return model.mipmapped_level(m, level, out); });
}

CUresult CUDAAPI cuTexObjectCreate(CUtexObject* out, const CUDA_RESOURCE_DESC* r, const CUDA_TEXTURE_DESC* t,
                                   const CUDA_RESOURCE_VIEW_DESC*) {
  if (!r || !t) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) { return m.texture_create(*r, false, out); });
}

CUresult CUDAAPI cuTexObjectDestroy(CUtexObject t) {
  return with_model([&](Model& m) { return m.texture_destroy(t, false); });
}

CUresult CUDAAPI cuSurfObjectCreate(CUsurfObject* out, const CUDA_RESOURCE_DESC* r) {
  if (!r) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) { return m.texture_create(*r, true, out); });
}

CUresult CUDAAPI cuSurfObjectDestroy(CUsurfObject s) {
  return with_model([&](Model& m) { return m.texture_destroy(s, true); });
}

}  // extern "C"
