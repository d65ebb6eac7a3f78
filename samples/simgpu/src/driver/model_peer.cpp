// Device model: peer access and copies between devices.  A copy from one
// GPU's memory to another's runs on the source's outbound and the
// destination's inbound copy engine at the pair's peer rate when peer access
// is enabled between them, else staged through host memory at half the
// slower device's pinned rate; NVML sees it as PCIe traffic on both.
#include <algorithm>

#include "../common/clock.hpp"
#include "activity.hpp"
#include "model.hpp"

namespace simgpu::drv {

bool Model::peer_capable(int dev, int peer) const {
  return dev != peer && dev >= 0 && peer >= 0 && dev < device_count() && peer < device_count() &&
         desc(dev).peer_access && desc(peer).peer_access;
}

void Model::plan_peer_copy(int src, int dst, size_t bytes, Work* w) const {
  const bool direct = devices_[src].peers.count(dst) || devices_[dst].peers.count(src);
  const double gbps = direct ? std::min(desc(src).peer_gbps, desc(dst).peer_gbps)
                             : std::min(desc(src).pinned_gbps, desc(dst).pinned_gbps) / 2;
  w->peer_src = src;
  w->peer_dst = dst;
  w->activity = Activity::CopyD2D;
  w->duration = us_to_ns(node_.costs.copy_latency_pinned) + static_cast<int64_t>(static_cast<double>(bytes) / gbps);
}

CUresult Model::can_access_peer(int dev, int peer, int* can) {
  if (!can) return CUDA_ERROR_INVALID_VALUE;
  if (dev < 0 || peer < 0 || dev >= device_count() || peer >= device_count()) return CUDA_ERROR_INVALID_DEVICE;
  *can = peer_capable(dev, peer);
  return CUDA_SUCCESS;
}

CUresult Model::set_peer_access(CUcontext peer_ctx, unsigned flags, bool enable) {
  if (enable && flags != 0) return CUDA_ERROR_INVALID_VALUE;
  int dev = 0;
  if (CUresult r = current_device(&dev)) return r;
  std::lock_guard lock(mu_);
  if (!contexts_.count(peer_ctx) || peer_ctx == current()) return CUDA_ERROR_INVALID_CONTEXT;
  const int peer = peer_ctx->device;
  if (!peer_capable(dev, peer)) return enable ? CUDA_ERROR_PEER_ACCESS_UNSUPPORTED : CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
  std::set<int>& peers = devices_[dev].peers;
  if (enable) return peers.insert(peer).second ? CUDA_SUCCESS : CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
  return peers.erase(peer) ? CUDA_SUCCESS : CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
}

CUresult Model::p2p_attribute(int* value, CUdevice_P2PAttribute attr, int src, int dst) {
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  if (src < 0 || dst < 0 || src >= device_count() || dst >= device_count() || src == dst)
    return CUDA_ERROR_INVALID_DEVICE;
  switch (attr) {
    case CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK: *value = 0; return CUDA_SUCCESS;  // one kind of link
    case CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED: *value = peer_capable(src, dst); return CUDA_SUCCESS;
    case CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED:   // PCIe peers have no native atomics,
    case CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED:  // and simgpu no arrays
    case CU_DEVICE_P2P_ATTRIBUTE_ONLY_PARTIAL_NATIVE_ATOMIC_SUPPORTED: *value = 0; return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

// cuMemcpyPeer(Async): the pointers must be device memory of the devices the
// contexts name.  The synchronous form is ordered with all work on the
// legacy streams of both devices, before and after, and does not hold the host.
CUresult Model::peer_copy(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx, size_t bytes,
                          CUstream s, bool per_thread, bool async) {
  if (bytes == 0) return CUDA_SUCCESS;
  wait_for_queue_slot();
  std::lock_guard lock(mu_);
  if (!contexts_.count(dst_ctx) || !contexts_.count(src_ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  Allocation a, b;
  auto* dst_p = reinterpret_cast<void*>(dst);
  auto* src_p = reinterpret_cast<void*>(src);
  if (!find_locked(dst_p, bytes, &a) || !find_locked(src_p, bytes, &b) || !is_device_kind(a.kind) ||
      !is_device_kind(b.kind) || a.device != dst_ctx->device || b.device != src_ctx->device)
    return CUDA_ERROR_INVALID_VALUE;
  CUstream_st* st = nullptr;
  if (CUresult r = resolve_stream(async ? s : nullptr, per_thread, &st)) return r;
  CopyRequest req;
  req.dir = CopyDir::DeviceToDevice;
  req.dst = dst_p;
  req.src = src_p;
  req.width = req.dst_pitch = req.src_pitch = bytes;
  req.async = true;
  Work w;
  HostHold unused;
  if (CUresult r = plan_copy(req, st, &w, &unused)) return r;
  if (st->capture) return check_not_capturing(*st);  // peer copies are not captured here
  const int64_t now = now_ns();
  auto chain = [now](StreamOp::Kind kind, MarkerRef m) { return StreamOp{kind, {}, {}, std::move(m), nullptr, now}; };
  std::vector<CUstream_st*> others;
  for (int dev : {a.device, b.device})
    if (!async && dev != st->device && std::find(others.begin(), others.end(), &devices_[dev].legacy) == others.end())
      others.push_back(&devices_[dev].legacy);
  for (CUstream_st* other : others) {
    auto before = std::make_shared<Marker>();
    submit(*other, chain(StreamOp::Kind::Record, before));
    submit(*st, chain(StreamOp::Kind::Wait, before));
  }
  w.traced.async = async;
  w.traced.correlation = activity_enter();
  submit(*st, StreamOp{StreamOp::Kind::Work, std::move(w), {}, nullptr, nullptr, now});
  if (others.empty()) return CUDA_SUCCESS;
  auto after = std::make_shared<Marker>();
  submit(*st, chain(StreamOp::Kind::Record, after));
  for (CUstream_st* other : others) submit(*other, chain(StreamOp::Kind::Wait, after));
  return CUDA_SUCCESS;
}

}  // namespace simgpu::drv
