// Device model: CUDA arrays and mipmapped arrays (cuArrayCreate,
// cuArray3DCreate, cuMipmappedArrayCreate), the memory texture code and
// older CUDA samples copy into. An array is dense device memory of its
// elements, so copies move real bytes and cost what device memory costs;
// texture and surface objects over them are handles, checked and kept
// (kernels compute nothing); layered, cubemap and sparse arrays are not
// modeled.
#include <algorithm>
#include <cstdlib>

#include "../common/array_format.hpp"
#include "model.hpp"

namespace simgpu::drv {
namespace {

// The shape of an array of this descriptor; false when CUDA refuses it.
bool shape_of(const CUDA_ARRAY3D_DESCRIPTOR& d, ArrayShape* out) {
  const size_t element = array_channel_bytes(d.Format) * d.NumChannels;
  const bool channels_ok = d.NumChannels == 1 || d.NumChannels == 2 || d.NumChannels == 4;
  if (element == 0 || !channels_ok || d.Width == 0 || (d.Depth != 0 && d.Height == 0)) return false;
  out->desc = d;
  out->row_bytes = d.Width * element;
  out->height = std::max<size_t>(d.Height, 1);
  out->depth = std::max<size_t>(d.Depth, 1);
  return true;
}

// Level `level` of a mipmapped array: every dimension the array has halves.
CUDA_ARRAY3D_DESCRIPTOR level_descriptor(CUDA_ARRAY3D_DESCRIPTOR d, unsigned level) {
  auto halve = [level](size_t n) { return n == 0 ? n : std::max<size_t>(n >> level, 1); };
  d.Width = halve(d.Width), d.Height = halve(d.Height), d.Depth = halve(d.Depth);
  return d;
}

uintptr_t handle_address(const void* handle) { return reinterpret_cast<uintptr_t>(handle); }

// A new handle: a small heap object, where a real driver's handles are.
uintptr_t new_handle() { return handle_address(std::malloc(64)); }
void free_handle(uintptr_t h) { std::free(reinterpret_cast<void*>(h)); }

}  // namespace

CUresult Model::array_create(const CUDA_ARRAY3D_DESCRIPTOR& d, CUarray* out) {
  ArrayShape shape;
  if (!out || !shape_of(d, &shape)) return CUDA_ERROR_INVALID_VALUE;
  void* p = nullptr;
  if (CUresult r = mem_alloc(shape.bytes(), MemKind::Array, 0, &p)) return r;
  shape.base = handle_address(p);
  const uintptr_t handle = new_handle();
  std::lock_guard lock(mu_);
  arrays_[handle] = shape;
  *out = reinterpret_cast<CUarray>(handle);
  return CUDA_SUCCESS;
}

CUresult Model::mipmapped_create(const CUDA_ARRAY3D_DESCRIPTOR& d, unsigned levels, CUmipmappedArray* out) {
  if (!out || levels == 0 || levels > 32) return CUDA_ERROR_INVALID_VALUE;
  std::vector<ArrayShape> shapes(levels);
  size_t bytes = 0;
  for (unsigned l = 0; l < levels; ++l) {
    if (!shape_of(level_descriptor(d, l), &shapes[l])) return CUDA_ERROR_INVALID_VALUE;
    bytes += shapes[l].bytes();
  }
  void* p = nullptr;
  if (CUresult r = mem_alloc(bytes, MemKind::Array, 0, &p)) return r;
  const uintptr_t chain = new_handle();
  MipmapChain levels_of{handle_address(p), {}};
  std::lock_guard lock(mu_);
  uintptr_t at = handle_address(p);
  for (ArrayShape& s : shapes) {
    s.base = at, s.mipmap = chain;
    at += s.bytes();
    levels_of.levels.push_back(new_handle());
    arrays_[levels_of.levels.back()] = s;
  }
  mipmaps_[chain] = std::move(levels_of);
  *out = reinterpret_cast<CUmipmappedArray>(chain);
  return CUDA_SUCCESS;
}

CUresult Model::array_destroy(CUarray a) {
  uintptr_t base = 0;
  {
    std::lock_guard lock(mu_);
    const auto it = arrays_.find(handle_address(a));
    if (it == arrays_.end() || it->second.mipmap != 0) return CUDA_ERROR_INVALID_HANDLE;
    base = it->second.base;
  }
  if (CUresult r = mem_free(reinterpret_cast<void*>(base), FreeOf::Array)) return r;
  std::lock_guard lock(mu_);
  arrays_.erase(handle_address(a));
  free_handle(handle_address(a));
  return CUDA_SUCCESS;
}

CUresult Model::mipmapped_destroy(CUmipmappedArray m) {
  const uintptr_t chain = handle_address(m);
  uintptr_t base = 0;
  {
    std::lock_guard lock(mu_);
    const auto it = mipmaps_.find(chain);
    if (it == mipmaps_.end()) return CUDA_ERROR_INVALID_HANDLE;
    base = it->second.base;
  }
  if (CUresult r = mem_free(reinterpret_cast<void*>(base), FreeOf::Array)) return r;
  std::lock_guard lock(mu_);
  const auto it = mipmaps_.find(chain);
  for (uintptr_t level : it->second.levels) {
    arrays_.erase(level);
    free_handle(level);
  }
  mipmaps_.erase(it);
  free_handle(chain);
  return CUDA_SUCCESS;
}

CUresult Model::array_descriptor(CUarray a, CUDA_ARRAY3D_DESCRIPTOR* out) {
  std::lock_guard lock(mu_);
  const auto it = arrays_.find(handle_address(a));
  if (it == arrays_.end()) return CUDA_ERROR_INVALID_HANDLE;
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  *out = it->second.desc;
  return CUDA_SUCCESS;
}

char* Model::array_memory(CUarray a) {
  std::lock_guard lock(mu_);
  const auto it = arrays_.find(handle_address(a));
  return it == arrays_.end() ? nullptr : reinterpret_cast<char*>(it->second.base);
}

CUresult Model::mipmapped_level(CUmipmappedArray m, unsigned level, CUarray* out) {
  std::lock_guard lock(mu_);
  const auto it = mipmaps_.find(handle_address(m));
  if (it == mipmaps_.end()) return CUDA_ERROR_INVALID_HANDLE;
  if (!out || level >= it->second.levels.size()) return CUDA_ERROR_INVALID_VALUE;
  *out = reinterpret_cast<CUarray>(it->second.levels[level]);
  return CUDA_SUCCESS;
}

// Whether a texture or surface may be made over this resource: an array
// that exists (surfaces: only a plain array), or device memory that holds
// the whole range.
bool Model::texture_resource_ok(const CUDA_RESOURCE_DESC& r, bool surface) const {
  Allocation a;
  switch (r.resType) {
    case CU_RESOURCE_TYPE_ARRAY: return arrays_.contains(handle_address(r.res.array.hArray));
    case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY: return !surface && mipmaps_.contains(handle_address(r.res.mipmap.hMipmappedArray));
    case CU_RESOURCE_TYPE_LINEAR:
      return !surface && find_locked(reinterpret_cast<const void*>(r.res.linear.devPtr), r.res.linear.sizeInBytes, &a) &&
             is_device_kind(a.kind);
    case CU_RESOURCE_TYPE_PITCH2D:
      return !surface &&
             find_locked(reinterpret_cast<const void*>(r.res.pitch2D.devPtr),
                         r.res.pitch2D.pitchInBytes * r.res.pitch2D.height, &a) &&
             is_device_kind(a.kind);
  }
  return false;
}

CUresult Model::texture_create(const CUDA_RESOURCE_DESC& r, bool surface, unsigned long long* out) {
  std::lock_guard lock(mu_);
  if (!out || !texture_resource_ok(r, surface)) return CUDA_ERROR_INVALID_VALUE;
  *out = next_texture_++;
  textures_[*out] = surface;
  return CUDA_SUCCESS;
}

CUresult Model::texture_destroy(unsigned long long handle, bool surface) {
  std::lock_guard lock(mu_);
  const auto it = textures_.find(handle);
  if (it == textures_.end() || it->second != surface) return CUDA_ERROR_INVALID_VALUE;
  textures_.erase(it);
  return CUDA_SUCCESS;
}

}  // namespace simgpu::drv
