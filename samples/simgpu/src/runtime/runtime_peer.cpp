// Runtime entry points for peer access and copies between devices.  The
// runtime names devices where the driver names their primary contexts.
#include "runtime.hpp"

using simgpu::rt::DriverTable;
using simgpu::rt::from_driver;
using simgpu::rt::with_driver;
using simgpu::rt::dptr;

namespace {

// The primary contexts of two devices, for the driver's peer calls.
cudaError_t contexts(int a, int b, CUcontext* ca, CUcontext* cb) {
  int count = 0;
  if (cudaError_t e = cudaGetDeviceCount(&count)) return e;
  if (a < 0 || b < 0 || a >= count || b >= count) return cudaErrorInvalidDevice;
  if (cudaError_t e = simgpu::rt::primary_context(a, ca)) return e;
  return simgpu::rt::primary_context(b, cb);
}

cudaError_t peer_access(int peer, unsigned flags, bool enable) {
  return with_driver(false, [&](const DriverTable& d) -> cudaError_t {
    const int dev = simgpu::rt::current_device();
    CUcontext mine = nullptr, theirs = nullptr;
    if (peer == dev) return cudaErrorInvalidDevice;
    if (cudaError_t e = contexts(dev, peer, &mine, &theirs)) return e;
    return from_driver(enable ? d.cuCtxEnablePeerAccess(theirs, flags) : d.cuCtxDisablePeerAccess(theirs));
  });
}

// cudaMemcpy3DPeerParms in the driver's terms (device memory on both sides).
cudaError_t peer_3d(const cudaMemcpy3DPeerParms* p, CUDA_MEMCPY3D_PEER* out) {
  if (!p) return cudaErrorInvalidValue;
  if (p->srcArray || p->dstArray) return cudaErrorNotSupported;
  CUcontext src = nullptr, dst = nullptr;
  if (cudaError_t e = contexts(p->srcDevice, p->dstDevice, &src, &dst)) return e;
  CUDA_MEMCPY3D_PEER c{};
  c.srcMemoryType = c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  c.srcXInBytes = p->srcPos.x, c.srcY = p->srcPos.y, c.srcZ = p->srcPos.z;
  c.srcDevice = dptr(p->srcPtr.ptr), c.srcPitch = p->srcPtr.pitch, c.srcHeight = p->srcPtr.ysize, c.srcContext = src;
  c.dstXInBytes = p->dstPos.x, c.dstY = p->dstPos.y, c.dstZ = p->dstPos.z;
  c.dstDevice = dptr(p->dstPtr.ptr), c.dstPitch = p->dstPtr.pitch, c.dstHeight = p->dstPtr.ysize, c.dstContext = dst;
  c.WidthInBytes = p->extent.width, c.Height = p->extent.height, c.Depth = p->extent.depth;
  *out = c;
  return cudaSuccess;
}

template <bool PT>
cudaError_t cudaMemcpy3DPeer_impl(const cudaMemcpy3DPeerParms* p) {
  return with_driver(PT, [&](const DriverTable& d) -> cudaError_t {
    CUDA_MEMCPY3D_PEER c;
    if (cudaError_t e = peer_3d(p, &c)) return e;
    return from_driver(d.cuMemcpy3DPeer(&c));
  });
}

template <bool PT>
cudaError_t cudaMemcpy3DPeerAsync_impl(const cudaMemcpy3DPeerParms* p, cudaStream_t s) {
  return with_driver(PT, [&](const DriverTable& d) -> cudaError_t {
    CUDA_MEMCPY3D_PEER c;
    if (cudaError_t e = peer_3d(p, &c)) return e;
    return from_driver(d.cuMemcpy3DPeerAsync(&c, s));
  });
}

}  // namespace

extern "C" {

cudaError_t CUDARTAPI cudaDeviceCanAccessPeer(int* can, int device, int peer) {
  return with_driver(false, [&](const DriverTable& d) { return from_driver(d.cuDeviceCanAccessPeer(can, device, peer)); });
}

cudaError_t CUDARTAPI cudaDeviceEnablePeerAccess(int peer, unsigned int flags) { return peer_access(peer, flags, true); }

cudaError_t CUDARTAPI cudaDeviceDisablePeerAccess(int peer) { return peer_access(peer, 0, false); }

// cudaDeviceP2PAttr and CUdevice_P2PAttribute share their numbering.
cudaError_t CUDARTAPI cudaDeviceGetP2PAttribute(int* value, cudaDeviceP2PAttr attr, int src, int dst) {
  return with_driver(false, [&](const DriverTable& d) {
    return from_driver(d.cuDeviceGetP2PAttribute(value, static_cast<CUdevice_P2PAttribute>(attr), src, dst));
  });
}

cudaError_t CUDARTAPI cudaMemcpyPeer(void* dst, int dst_device, const void* src, int src_device, size_t count) {
  return with_driver(false, [&](const DriverTable& d) -> cudaError_t {
    CUcontext dst_ctx = nullptr, src_ctx = nullptr;
    if (cudaError_t e = contexts(dst_device, src_device, &dst_ctx, &src_ctx)) return e;
    return from_driver(d.cuMemcpyPeer(dptr(dst), dst_ctx, dptr(src), src_ctx, count));
  });
}

cudaError_t CUDARTAPI cudaMemcpyPeerAsync(void* dst, int dst_device, const void* src, int src_device, size_t count,
                                          cudaStream_t s) {
  return with_driver(false, [&](const DriverTable& d) -> cudaError_t {
    CUcontext dst_ctx = nullptr, src_ctx = nullptr;
    if (cudaError_t e = contexts(dst_device, src_device, &dst_ctx, &src_ctx)) return e;
    return from_driver(d.cuMemcpyPeerAsync(dptr(dst), dst_ctx, dptr(src), src_ctx, count, s));
  });
}

}  // extern "C"

SIMGPU_RUNTIME_DUAL(cudaMemcpy3DPeer, _ptds, (const cudaMemcpy3DPeerParms* p), (p))
SIMGPU_RUNTIME_DUAL(cudaMemcpy3DPeerAsync, _ptsz, (const cudaMemcpy3DPeerParms* p, cudaStream_t s), (p, s))
