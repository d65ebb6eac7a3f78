// Runtime batched copies, CUDA 13's cudaMemcpyBatchAsync and
// cudaMemcpy3DBatchAsync (and their _ptsz twins): each passes its copies to
// the driver's batched copy with the runtime's types in the driver's terms,
// as the real runtime does. The driver (driver_batch_api.cpp) checks them.
#include <vector>

#include "runtime.hpp"

using simgpu::rt::DriverTable;
using simgpu::rt::from_driver;
using simgpu::rt::with_driver;
using simgpu::rt::dptr;

namespace {

CUmemLocation driver_location(const cudaMemLocation& l) {
  return CUmemLocation{static_cast<CUmemLocationType>(l.type), l.id};
}

CUmemcpyAttributes driver_attributes(const cudaMemcpyAttributes& a) {
  CUmemcpyAttributes out{};
  out.srcAccessOrder = static_cast<CUmemcpySrcAccessOrder>(a.srcAccessOrder);
  out.srcLocHint = driver_location(a.srcLocHint);
  out.dstLocHint = driver_location(a.dstLocHint);
  out.flags = a.flags;
  return out;
}

CUmemcpy3DOperand driver_operand(const cudaMemcpy3DOperand& o) {
  CUmemcpy3DOperand out{};
  out.type = static_cast<CUmemcpy3DOperandType>(o.type);
  if (o.type == cudaMemcpyOperandTypeArray) {
    out.op.array.array = reinterpret_cast<CUarray>(o.op.array.array);
    out.op.array.offset = CUoffset3D{o.op.array.offset.x, o.op.array.offset.y, o.op.array.offset.z};
  } else {
    out.op.ptr.ptr = dptr(o.op.ptr.ptr);
    out.op.ptr.rowLength = o.op.ptr.rowLength;
    out.op.ptr.layerHeight = o.op.ptr.layerHeight;
    out.op.ptr.locHint = driver_location(o.op.ptr.locHint);
  }
  return out;
}

CUDA_MEMCPY3D_BATCH_OP driver_op(const cudaMemcpy3DBatchOp& op) {
  CUDA_MEMCPY3D_BATCH_OP out{};
  out.src = driver_operand(op.src);
  out.dst = driver_operand(op.dst);
  out.extent = CUextent3D{op.extent.width, op.extent.height, op.extent.depth};
  out.srcAccessOrder = static_cast<CUmemcpySrcAccessOrder>(op.srcAccessOrder);
  out.flags = op.flags;
  return out;
}

template <bool PT>
cudaError_t cudaMemcpyBatchAsync_impl(void* const* dsts, const void* const* srcs, const size_t* sizes, size_t count,
                                      cudaMemcpyAttributes* attrs, size_t* idxs, size_t nattrs, cudaStream_t s) {
  return with_driver(PT, [&](const DriverTable& d) -> cudaError_t {
    if ((count && (!dsts || !srcs || !sizes)) || (nattrs && !attrs)) return cudaErrorInvalidValue;
    std::vector<CUdeviceptr> to(count), from(count);
    for (size_t i = 0; i < count; ++i) to[i] = dptr(dsts[i]), from[i] = dptr(srcs[i]);
    std::vector<size_t> bytes(sizes, sizes + count);
    std::vector<CUmemcpyAttributes> driver_attrs(nattrs);
    for (size_t i = 0; i < nattrs; ++i) driver_attrs[i] = driver_attributes(attrs[i]);
    return from_driver(d.cuMemcpyBatchAsync(to.data(), from.data(), bytes.data(), count,
                                            nattrs ? driver_attrs.data() : nullptr, idxs, nattrs, s));
  });
}

template <bool PT>
cudaError_t cudaMemcpy3DBatchAsync_impl(size_t n, cudaMemcpy3DBatchOp* ops, unsigned long long flags,
                                        cudaStream_t s) {
  return with_driver(PT, [&](const DriverTable& d) -> cudaError_t {
    if (n && !ops) return cudaErrorInvalidValue;
    std::vector<CUDA_MEMCPY3D_BATCH_OP> driver_ops(n);
    for (size_t i = 0; i < n; ++i) driver_ops[i] = driver_op(ops[i]);
    return from_driver(d.cuMemcpy3DBatchAsync(n, n ? driver_ops.data() : nullptr, flags, s));
  });
}

}  // namespace

SIMGPU_RUNTIME_DUAL(cudaMemcpyBatchAsync, _ptsz,
                    (void* const* dsts, const void* const* srcs, const size_t* sizes, size_t count,
                     cudaMemcpyAttributes* attrs, size_t* idxs, size_t nattrs, cudaStream_t s),
                    (dsts, srcs, sizes, count, attrs, idxs, nattrs, s))
SIMGPU_RUNTIME_DUAL(cudaMemcpy3DBatchAsync, _ptsz,
                    (size_t n, cudaMemcpy3DBatchOp* ops, unsigned long long flags, cudaStream_t s),
                    (n, ops, flags, s))
