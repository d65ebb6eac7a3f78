// Driver API entry points for peer access and copies between devices.
#include "driver_api.hpp"

using simgpu::drv::Model;
using simgpu::drv::with_model;

namespace {

// A 3D copy between contexts is a 3D copy: one address space, and the model
// finds each side's device from the pointer.
CUDA_MEMCPY3D without_contexts(const CUDA_MEMCPY3D_PEER& p) {
  CUDA_MEMCPY3D c{};
  c.srcXInBytes = p.srcXInBytes, c.srcY = p.srcY, c.srcZ = p.srcZ, c.srcLOD = p.srcLOD;
  c.srcMemoryType = p.srcMemoryType, c.srcHost = p.srcHost, c.srcDevice = p.srcDevice, c.srcArray = p.srcArray;
  c.srcPitch = p.srcPitch, c.srcHeight = p.srcHeight;
  c.dstXInBytes = p.dstXInBytes, c.dstY = p.dstY, c.dstZ = p.dstZ, c.dstLOD = p.dstLOD;
  c.dstMemoryType = p.dstMemoryType, c.dstHost = p.dstHost, c.dstDevice = p.dstDevice, c.dstArray = p.dstArray;
  c.dstPitch = p.dstPitch, c.dstHeight = p.dstHeight;
  c.WidthInBytes = p.WidthInBytes, c.Height = p.Height, c.Depth = p.Depth;
  return c;
}

template <bool PT>
CUresult cuMemcpyPeer_impl(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx, size_t n) {
  return with_model([&](Model& m) { return m.peer_copy(dst, dst_ctx, src, src_ctx, n, nullptr, PT, false); });
}

template <bool PT>
CUresult cuMemcpyPeerAsync_impl(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx, size_t n,
                                CUstream s) {
  return with_model([&](Model& m) { return m.peer_copy(dst, dst_ctx, src, src_ctx, n, s, PT, true); });
}

template <bool PT>
CUresult cuMemcpy3DPeer_impl(const CUDA_MEMCPY3D_PEER* p) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) { return m.copy_3d(without_contexts(*p), nullptr, PT, false); });
}

template <bool PT>
CUresult cuMemcpy3DPeerAsync_impl(const CUDA_MEMCPY3D_PEER* p, CUstream s) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) { return m.copy_3d(without_contexts(*p), s, PT, true); });
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuDeviceCanAccessPeer(int* can, CUdevice dev, CUdevice peer) {
  return with_model([&](Model& m) { return m.can_access_peer(dev, peer, can); });
}

CUresult CUDAAPI cuCtxEnablePeerAccess(CUcontext peer, unsigned int flags) {
  return with_model([&](Model& m) { return m.set_peer_access(peer, flags, true); });
}

CUresult CUDAAPI cuCtxDisablePeerAccess(CUcontext peer) {
  return with_model([&](Model& m) { return m.set_peer_access(peer, 0, false); });
}

CUresult CUDAAPI cuDeviceGetP2PAttribute(int* value, CUdevice_P2PAttribute attr, CUdevice src, CUdevice dst) {
  return with_model([&](Model& m) { return m.p2p_attribute(value, attr, src, dst); });
}

}  // extern "C"

SIMGPU_DRIVER_DUAL(cuMemcpyPeer, _ptds,
                   (CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx, size_t n),
                   (dst, dst_ctx, src, src_ctx, n))
SIMGPU_DRIVER_DUAL(cuMemcpyPeerAsync, _ptsz,
                   (CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx, size_t n, CUstream s),
                   (dst, dst_ctx, src, src_ctx, n, s))
SIMGPU_DRIVER_DUAL(cuMemcpy3DPeer, _ptds, (const CUDA_MEMCPY3D_PEER* p), (p))
SIMGPU_DRIVER_DUAL(cuMemcpy3DPeerAsync, _ptsz, (const CUDA_MEMCPY3D_PEER* p, CUstream s), (p, s))
