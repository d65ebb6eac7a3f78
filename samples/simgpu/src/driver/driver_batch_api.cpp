// Driver API batched copies: cuMemcpyBatchAsync and cuMemcpy3DBatchAsync in
// CUDA 13's form (_v2) and CUDA 12.8's (with the index of a failing copy),
// each with its per-thread default stream twin. A batch is a list of copies
// on one stream: each is a copy of its own in the model, in the batch's
// order, with a device record of its own (as CUPTI gives one per copy).
// The attributes' access-order and location hints change no bytes and are
// checked, not modeled.
#include <cstdint>

#include "../common/array_format.hpp"
#include "driver_api.hpp"

#undef cuMemcpyBatchAsync
#undef cuMemcpy3DBatchAsync

using simgpu::drv::Model;
using simgpu::drv::with_model;

namespace {

constexpr size_t kNoFailure = SIZE_MAX;  // what CUDA 12.8 writes to failIdx when no copy failed

bool valid_order(CUmemcpySrcAccessOrder o) {
  return o == CU_MEMCPY_SRC_ACCESS_ORDER_STREAM || o == CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL ||
         o == CU_MEMCPY_SRC_ACCESS_ORDER_ANY;
}

// "Must not be the legacy NULL stream": a null stream is the per-thread one
// in the _ptsz entry points, the legacy one elsewhere.
bool valid_stream(CUstream s, bool per_thread) { return s != CU_STREAM_LEGACY && (s != nullptr || per_thread); }

// Every copy covered by one attribute entry: the first index 0, each after
// it larger, the last below count, and no more entries than copies.
bool valid_attributes(const CUmemcpyAttributes* attrs, const size_t* idxs, size_t n, size_t count) {
  if (attrs == nullptr || idxs == nullptr || n == 0 || n > count || idxs[0] != 0) return false;
  for (size_t i = 0; i < n; ++i) {
    if (!valid_order(attrs[i].srcAccessOrder) || idxs[i] >= count) return false;
    if (i > 0 && idxs[i] <= idxs[i - 1]) return false;
  }
  return true;
}

// One pointer-to-pointer copy, where unified addressing says each side is.
CUDA_MEMCPY3D linear_copy(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  CUDA_MEMCPY3D c{};
  c.srcMemoryType = c.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
  c.srcDevice = src, c.dstDevice = dst;
  c.WidthInBytes = bytes, c.Height = 1, c.Depth = 1;
  return c;
}

CUresult batch(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count, CUmemcpyAttributes* attrs,
               size_t* idxs, size_t nattrs, size_t* fail, CUstream s, bool pt) {
  if (fail) *fail = kNoFailure;
  if (count == 0 || !dsts || !srcs || !sizes || !valid_attributes(attrs, idxs, nattrs, count) ||
      !valid_stream(s, pt))
    return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) {
    for (size_t i = 0; i < count; ++i)
      if (CUresult r = m.copy_3d(linear_copy(dsts[i], srcs[i], sizes[i]), s, pt, true)) {
        if (fail) *fail = i;
        return r;
      }
    return CUDA_SUCCESS;
  });
}

// Bytes of one element of an operand's array; 0 for no array.
size_t element_bytes(Model& m, const CUmemcpy3DOperand& o) {
  CUDA_ARRAY3D_DESCRIPTOR d{};
  if (o.type != CU_MEMCPY_OPERAND_TYPE_ARRAY || m.array_descriptor(o.op.array.array, &d) != CUDA_SUCCESS) return 0;
  return simgpu::array_channel_bytes(d.Format) * d.NumChannels;
}

// One side of a batched 3D copy in a 3D copy's terms: a pointer with its
// rows and layers in elements (0: packed to the extent), or an array at an
// element offset.
struct Side {
  CUmemorytype type = CU_MEMORYTYPE_UNIFIED;
  CUarray array = nullptr;
  CUdeviceptr ptr = 0;
  size_t pitch = 0, rows = 0, x = 0, y = 0, z = 0;
};

bool side_of(const CUmemcpy3DOperand& o, size_t element, const CUextent3D& e, Side* out) {
  if (o.type == CU_MEMCPY_OPERAND_TYPE_ARRAY) {
    const CUoffset3D& at = o.op.array.offset;
    *out = Side{CU_MEMORYTYPE_ARRAY, o.op.array.array, 0, 0, 0, at.x * element, at.y, at.z};
    return true;
  }
  const auto& p = o.op.ptr;
  if (o.type != CU_MEMCPY_OPERAND_TYPE_POINTER || (p.rowLength && p.rowLength < e.width) ||
      (p.layerHeight && p.layerHeight < e.height))
    return false;
  *out = Side{CU_MEMORYTYPE_UNIFIED, nullptr, p.ptr, (p.rowLength ? p.rowLength : e.width) * element,
              p.layerHeight ? p.layerHeight : e.height};
  return true;
}

void place_source(const Side& s, CUDA_MEMCPY3D* c) {
  c->srcMemoryType = s.type, c->srcArray = s.array, c->srcDevice = s.ptr, c->srcPitch = s.pitch, c->srcHeight = s.rows;
  c->srcXInBytes = s.x, c->srcY = s.y, c->srcZ = s.z;
}

void place_destination(const Side& s, CUDA_MEMCPY3D* c) {
  c->dstMemoryType = s.type, c->dstArray = s.array, c->dstDevice = s.ptr, c->dstPitch = s.pitch, c->dstHeight = s.rows;
  c->dstXInBytes = s.x, c->dstY = s.y, c->dstZ = s.z;
}

// A batched 3D copy as a 3D copy; its extent counts the array's elements
// (bytes between pointers), and two arrays must agree on their size.
CUresult describe_op(Model& m, const CUDA_MEMCPY3D_BATCH_OP& op, CUDA_MEMCPY3D* c) {
  const CUextent3D& e = op.extent;
  if (e.width == 0 || e.height == 0 || e.depth == 0 || !valid_order(op.srcAccessOrder)) return CUDA_ERROR_INVALID_VALUE;
  const size_t src = element_bytes(m, op.src), dst = element_bytes(m, op.dst);
  if (src && dst && src != dst) return CUDA_ERROR_INVALID_VALUE;
  const size_t element = src ? src : dst ? dst : 1;
  Side from, to;
  if (!side_of(op.src, element, e, &from) || !side_of(op.dst, element, e, &to)) return CUDA_ERROR_INVALID_VALUE;
  *c = CUDA_MEMCPY3D{};
  place_source(from, c);
  place_destination(to, c);
  c->WidthInBytes = e.width * element, c->Height = e.height, c->Depth = e.depth;
  return CUDA_SUCCESS;
}

CUresult batch_3d(size_t n, CUDA_MEMCPY3D_BATCH_OP* ops, size_t* fail, unsigned long long flags, CUstream s, bool pt) {
  if (fail) *fail = kNoFailure;
  if (n == 0 || !ops || flags != 0 || !valid_stream(s, pt)) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) {
    for (size_t i = 0; i < n; ++i) {
      CUDA_MEMCPY3D c;
      CUresult r = describe_op(m, ops[i], &c);
      if (r == CUDA_SUCCESS) r = m.copy_3d(c, s, pt, true);
      if (r != CUDA_SUCCESS) {
        if (fail) *fail = i;
        return r;
      }
    }
    return CUDA_SUCCESS;
  });
}

// One implementation per form; PT: the per-thread default stream twin.
template <bool PT>
CUresult cuMemcpyBatchAsync_v2_impl(CUdeviceptr* d, CUdeviceptr* src, size_t* sizes, size_t count,
                                    CUmemcpyAttributes* a, size_t* ai, size_t na, CUstream s) {
  return batch(d, src, sizes, count, a, ai, na, nullptr, s, PT);
}
template <bool PT>
CUresult cuMemcpyBatchAsync_impl(CUdeviceptr* d, CUdeviceptr* src, size_t* sizes, size_t count, CUmemcpyAttributes* a,
                                 size_t* ai, size_t na, size_t* fail, CUstream s) {
  return batch(d, src, sizes, count, a, ai, na, fail, s, PT);
}
template <bool PT>
CUresult cuMemcpy3DBatchAsync_v2_impl(size_t n, CUDA_MEMCPY3D_BATCH_OP* ops, unsigned long long f, CUstream s) {
  return batch_3d(n, ops, nullptr, f, s, PT);
}
template <bool PT>
CUresult cuMemcpy3DBatchAsync_impl(size_t n, CUDA_MEMCPY3D_BATCH_OP* ops, size_t* fail, unsigned long long f,
                                   CUstream s) {
  return batch_3d(n, ops, fail, f, s, PT);
}

}  // namespace

SIMGPU_DRIVER_DUAL(cuMemcpyBatchAsync_v2, _ptsz,
                   (CUdeviceptr * d, CUdeviceptr* src, size_t* sizes, size_t count, CUmemcpyAttributes* a, size_t* ai,
                    size_t na, CUstream s),
                   (d, src, sizes, count, a, ai, na, s))
SIMGPU_DRIVER_DUAL(cuMemcpyBatchAsync, _ptsz,
                   (CUdeviceptr * d, CUdeviceptr* src, size_t* sizes, size_t count, CUmemcpyAttributes* a, size_t* ai,
                    size_t na, size_t* fail, CUstream s),
                   (d, src, sizes, count, a, ai, na, fail, s))
SIMGPU_DRIVER_DUAL(cuMemcpy3DBatchAsync_v2, _ptsz,
                   (size_t n, CUDA_MEMCPY3D_BATCH_OP* ops, unsigned long long f, CUstream s), (n, ops, f, s))
SIMGPU_DRIVER_DUAL(cuMemcpy3DBatchAsync, _ptsz,
                   (size_t n, CUDA_MEMCPY3D_BATCH_OP* ops, size_t* fail, unsigned long long f, CUstream s),
                   (n, ops, fail, f, s))
