// Device model: copies and memsets, 1D to 3D.  A copy occupies a copy engine
// (or, device to device, the compute engine's DRAM) for latency + bytes /
// bandwidth; its bytes move when the stream reaches it (host_worker.hpp).
#include <algorithm>
#include <cstring>

#include "../common/clock.hpp"
#include "activity.hpp"
#include "model.hpp"

namespace simgpu::drv {
namespace {

// memmove, minus a host-CPU pathology: glibc's "rep movsb" runs at a tenth
// of its speed on some x86 parts (AMD EPYC here) when the destination sits
// just past the source modulo 4 KiB -- which is exactly how a malloc'ed host
// buffer (page + 16) lines up with page-aligned device memory.  Those copies
// go through 64-byte chunks instead, so host memory speed never overrides
// the modeled PCIe time.
void copy_bytes(char* dst, const char* src, size_t n) {
  const uintptr_t skew = (reinterpret_cast<uintptr_t>(dst) - reinterpret_cast<uintptr_t>(src)) & 4095;
  const bool overlap = dst < src + n && src < dst + n;
  if (overlap || skew == 0 || skew >= 256 || n < 4096) {
    std::memmove(dst, src, n);
    return;
  }
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    char chunk[64];
    std::memcpy(chunk, src + i, 64);
    std::memcpy(dst + i, chunk, 64);
  }
  std::memcpy(dst + i, src + i, n - i);
}

void move_bytes(const CopyRequest& r) {
  auto* dst = static_cast<char*>(r.dst);
  const auto* src = static_cast<const char*>(r.src);
  const bool dense = r.dst_pitch == r.width && r.src_pitch == r.width;
  if (dense && (r.depth == 1 || (r.dst_slice == r.width * r.height && r.src_slice == r.width * r.height))) {
    copy_bytes(dst, src, r.bytes());
    return;
  }
  for (size_t z = 0; z < r.depth; ++z)
    for (size_t y = 0; y < r.height; ++y)
      copy_bytes(dst + z * r.dst_slice + y * r.dst_pitch, src + z * r.src_slice + y * r.src_pitch, r.width);
}

template <class T>
void fill_rows(const MemsetRequest& r, T value) {
  for (size_t y = 0; y < r.height; ++y)
    std::fill_n(reinterpret_cast<T*>(static_cast<char*>(r.dst) + y * r.pitch), r.width, value);
}

void set_bytes(const MemsetRequest& r) {
  if (r.elem_size == 1) fill_rows<uint8_t>(r, static_cast<uint8_t>(r.value));
  if (r.elem_size == 2) fill_rows<uint16_t>(r, static_cast<uint16_t>(r.value));
  if (r.elem_size == 4) fill_rows<uint32_t>(r, r.value);
}

// A captured copy as a memcpy node's parameters.
CUDA_MEMCPY3D as_node(const CopyRequest& r) {
  const bool src_dev = r.dir == CopyDir::DeviceToHost || r.dir == CopyDir::DeviceToDevice;
  const bool dst_dev = r.dir == CopyDir::HostToDevice || r.dir == CopyDir::DeviceToDevice;
  CUDA_MEMCPY3D c{};
  c.srcMemoryType = src_dev ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
  c.srcHost = r.src;
  c.srcDevice = reinterpret_cast<CUdeviceptr>(r.src);
  c.srcPitch = r.src_pitch;
  c.srcHeight = r.src_pitch ? r.src_slice / r.src_pitch : 0;
  c.dstMemoryType = dst_dev ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
  c.dstHost = r.dst;
  c.dstDevice = reinterpret_cast<CUdeviceptr>(r.dst);
  c.dstPitch = r.dst_pitch;
  c.dstHeight = r.dst_pitch ? r.dst_slice / r.dst_pitch : 0;
  c.WidthInBytes = r.width, c.Height = r.height, c.Depth = r.depth;
  return c;
}

// What the simulated CUPTI records of a copy (CUPTI's own kind values).
DeviceRecord copy_record(const CopyRequest& req, size_t bytes, uint8_t dst_kind, uint8_t src_kind, bool peer) {
  DeviceRecord r;
  r.kind = DeviceRecord::Copy;
  r.bytes = bytes;
  r.async = req.async;
  r.dst_kind = dst_kind;
  r.src_kind = src_kind;
  switch (req.dir) {
    case CopyDir::HostToDevice:
      r.copy_kind = req.dst_array ? CUPTI_ACTIVITY_MEMCPY_KIND_HTOA : CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
      break;
    case CopyDir::DeviceToHost:
      r.copy_kind = req.src_array ? CUPTI_ACTIVITY_MEMCPY_KIND_ATOH : CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
      break;
    case CopyDir::DeviceToDevice:
      r.copy_kind = req.src_array && req.dst_array ? CUPTI_ACTIVITY_MEMCPY_KIND_ATOA
                    : req.src_array                ? CUPTI_ACTIVITY_MEMCPY_KIND_ATOD
                    : req.dst_array                ? CUPTI_ACTIVITY_MEMCPY_KIND_DTOA
                    : peer                         ? CUPTI_ACTIVITY_MEMCPY_KIND_PTOP
                                                   : CUPTI_ACTIVITY_MEMCPY_KIND_DTOD;
      break;
    case CopyDir::HostToHost: r.copy_kind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOH; break;
  }
  return r;
}

}  // namespace

// CUPTI's memory kind of the allocation that holds [p, p + len) (under mu_).
uint8_t Model::memory_kind_at(const void* p, size_t len) const {
  Allocation a;
  if (!find_locked(p, len, &a)) return CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
  switch (a.kind) {
    case MemKind::Device: return CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    case MemKind::Managed: return CUPTI_ACTIVITY_MEMORY_KIND_MANAGED;
    case MemKind::HostPinned:
    case MemKind::HostRegistered: return CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
    case MemKind::Array: return CUPTI_ACTIVITY_MEMORY_KIND_ARRAY;
  }
  return CUPTI_ACTIVITY_MEMORY_KIND_UNKNOWN;
}

namespace {

// One side's fields of a 3D copy descriptor.
struct SideFields {
  CUmemorytype type;
  const void* host;
  CUdeviceptr device;
  CUarray array;
  size_t pitch, rows, x, y, z;
};

SideFields side_fields(const CUDA_MEMCPY3D& c, bool source) {
  if (source)
    return {c.srcMemoryType, c.srcHost, c.srcDevice, c.srcArray, c.srcPitch, c.srcHeight, c.srcXInBytes, c.srcY, c.srcZ};
  return {c.dstMemoryType, c.dstHost, c.dstDevice, c.dstArray, c.dstPitch, c.dstHeight, c.dstXInBytes, c.dstY, c.dstZ};
}

}  // namespace

// One side of a 3D copy: where it starts, its pitch and the rows of a
// slice. An array's come from its shape, other memory's from the descriptor.
CUresult Model::copy_side_locked(const CUDA_MEMCPY3D& c, bool source, CopySide* out) const {
  SideFields f = side_fields(c, source);
  const char* base = nullptr;
  if (f.type == CU_MEMORYTYPE_ARRAY) {
    const auto it = arrays_.find(reinterpret_cast<uintptr_t>(f.array));
    if (it == arrays_.end()) return CUDA_ERROR_INVALID_HANDLE;
    base = reinterpret_cast<const char*>(it->second.base);
    f.pitch = it->second.row_bytes;
    f.rows = it->second.height;
  } else if (f.type == CU_MEMORYTYPE_HOST) {
    base = static_cast<const char*>(f.host);
  } else if (f.type == CU_MEMORYTYPE_DEVICE || f.type == CU_MEMORYTYPE_UNIFIED) {
    base = reinterpret_cast<const char*>(static_cast<uintptr_t>(f.device));
  }
  if (!base) return CUDA_ERROR_INVALID_VALUE;  // no address, or a type CUDA does not have
  out->pitch = f.pitch ? f.pitch : c.WidthInBytes;
  out->rows = f.rows ? f.rows : c.Height;
  out->array = f.type == CU_MEMORYTYPE_ARRAY;
  out->at = base + f.z * out->pitch * out->rows + f.y * out->pitch + f.x;
  return CUDA_SUCCESS;
}

CUresult Model::describe_copy_locked(const CUDA_MEMCPY3D& c, CopyRequest* out) const {
  CopySide src, dst;
  if (CUresult e = copy_side_locked(c, true, &src)) return e;
  if (CUresult e = copy_side_locked(c, false, &dst)) return e;
  CopyRequest& r = *out;
  r.width = c.WidthInBytes;
  r.height = c.Height;
  r.depth = c.Depth;
  r.src_pitch = src.pitch, r.src_slice = src.pitch * src.rows, r.src_array = src.array;
  r.dst_pitch = dst.pitch, r.dst_slice = dst.pitch * dst.rows, r.dst_array = dst.array;
  if (r.src_pitch < r.width || r.dst_pitch < r.width) return CUDA_ERROR_INVALID_VALUE;
  if (r.depth > 1 && (src.rows < c.Height || dst.rows < c.Height)) return CUDA_ERROR_INVALID_VALUE;
  r.src = src.at;
  r.dst = const_cast<char*>(dst.at);
  // Unified addresses are looked up, as cudaMemcpyDefault does.
  auto on_device = [&](CUmemorytype type, const void* p) {
    if (type != CU_MEMORYTYPE_UNIFIED) return type == CU_MEMORYTYPE_DEVICE || type == CU_MEMORYTYPE_ARRAY;
    Allocation a;
    return find_locked(p, 1, &a) && is_device_kind(a.kind);
  };
  const bool src_dev = on_device(c.srcMemoryType, r.src), dst_dev = on_device(c.dstMemoryType, r.dst);
  r.dir = src_dev && dst_dev ? CopyDir::DeviceToDevice
          : dst_dev          ? CopyDir::HostToDevice
          : src_dev          ? CopyDir::DeviceToHost
                             : CopyDir::HostToHost;
  return CUDA_SUCCESS;
}

// Validates a copy and says what it costs and how long it holds the caller:
// until the copy ends (the synchronous API, pageable downloads), for its own
// duration while the CPU stages a pageable upload, or not at all (pinned
// asynchronous copies, device to device).
CUresult Model::plan_copy(const CopyRequest& req, CUstream_st* st, Work* work, HostHold* hold) {
  const size_t bytes = req.bytes();
  const size_t dst_len = span(req.width, req.height, req.depth, req.dst_pitch, req.dst_slice);
  const size_t src_len = span(req.width, req.height, req.depth, req.src_pitch, req.src_slice);
  Allocation dst, src;
  const bool dst_dev = find_locked(req.dst, dst_len, &dst) && is_device_kind(dst.kind);
  const bool src_dev = find_locked(req.src, src_len, &src) && is_device_kind(src.kind);
  const DeviceDesc& d = desc(st->device);
  Work w;
  w.bytes = bytes;
  bool staged = false, holds = false;  // device-to-device copies never hold the host
  if (req.dir == CopyDir::DeviceToDevice && dst_dev && src_dev && dst.device != src.device) {
    plan_peer_copy(src.device, dst.device, bytes, &w);
  } else if (req.dir == CopyDir::DeviceToDevice) {
    if (!dst_dev || !src_dev) return CUDA_ERROR_INVALID_VALUE;
    w.engine = Engine::Compute;
    w.activity = Activity::CopyD2D;
    w.bytes = 2 * bytes;  // read and written once each
    w.duration = static_cast<int64_t>(2.0 * bytes / d.dram_gbps);
    w.start_latency = us_to_ns(node_.costs.kernel_start_latency);
  } else {
    const bool to_device = req.dir == CopyDir::HostToDevice;
    if (to_device ? !dst_dev : !src_dev) return CUDA_ERROR_INVALID_VALUE;
    Allocation host;
    const bool pinned = find_locked(to_device ? req.src : req.dst, to_device ? src_len : dst_len, &host) &&
                        is_pinned_kind(host.kind);
    w.engine = to_device ? Engine::HostToDevice : Engine::DeviceToHost;
    w.activity = to_device ? Activity::CopyH2D : Activity::CopyD2H;
    const double gbps = pinned ? d.pinned_gbps : d.pageable_gbps;
    const double latency = pinned ? node_.costs.copy_latency_pinned : node_.costs.copy_latency_pageable;
    w.duration = us_to_ns(latency) + static_cast<int64_t>(static_cast<double>(bytes) / gbps);
    // When the caller gets control back, as on real hardware: the synchronous
    // API and device-to-host copies into pageable memory return once the
    // bytes have landed; a pageable "async" upload returns once the CPU has
    // staged it (its full duration, but not the wait for earlier work in the
    // stream); a pinned async copy returns at once.
    staged = req.async && to_device && !pinned;
    holds = !req.async || !pinned;
  }
  w.move = [req] { move_bytes(req); };
  w.traced = copy_record(req, bytes, memory_kind_at(req.dst, dst_len), memory_kind_at(req.src, src_len),
                         w.peer_src >= 0);
  *hold = staged ? HostHold::Staging : holds ? HostHold::UntilDone : HostHold::None;
  *work = std::move(w);
  return CUDA_SUCCESS;
}

CUresult Model::copy(const CopyRequest& req) {
  if (req.bytes() == 0) return CUDA_SUCCESS;
  if (!req.dst || !req.src) return CUDA_ERROR_INVALID_VALUE;
  if (req.dir == CopyDir::HostToHost) {
    // Fully synchronous: waits for the stream, then the CPU copies.
    CUresult r = stream_synchronize(req.stream, req.per_thread, /*traced=*/false);
    if (r == CUDA_SUCCESS) move_bytes(req);
    return r;
  }
  wait_for_queue_slot();
  std::shared_ptr<Scheduled> scheduled;
  HostHold hold = HostHold::None;
  int64_t duration = 0;
  const int64_t submitted = now_ns();
  {
    std::lock_guard lock(mu_);
    CUstream_st* st = nullptr;
    if (CUresult r = resolve_stream(req.stream, req.per_thread, &st)) return r;
    Work w;
    if (CUresult r = plan_copy(req, st, &w, &hold)) return r;
    if (st->capture) {
      if (!req.async) return check_not_capturing(*st);  // a synchronous copy cannot be captured
      NodeParams node;
      node.type = CU_GRAPH_NODE_TYPE_MEMCPY;
      node.copy = as_node(req);
      return capture_node(*st, std::move(node));
    }
    if (hold == HostHold::UntilDone)
      if (CUresult r = check_unsafe_call()) return r;
    duration = w.duration;
    w.traced.correlation = activity_enter();
    scheduled = submit(*st, StreamOp{StreamOp::Kind::Work, std::move(w), {}, nullptr, nullptr, submitted});
  }
  // An asynchronous copy from pinned memory returns at once: the byte mover
  // copies when the stream reaches it, and a synchronize waits for it.
  if (hold == HostHold::None) return CUDA_SUCCESS;
  wait_until_scheduled(scheduled);
  HostWorker::instance().run_through(scheduled->slot.task);
  wait_until(hold == HostHold::Staging ? submitted + duration : scheduled->slot.end);
  return CUDA_SUCCESS;
}

CUresult Model::copy_3d(const CUDA_MEMCPY3D& c, CUstream s, bool per_thread, bool async) {
  CopyRequest r;
  {
    std::lock_guard lock(mu_);
    if (CUresult e = describe_copy_locked(c, &r)) return e;
  }
  r.stream = s;
  r.per_thread = per_thread;
  r.async = async;
  return copy(r);
}

// Memsets run on the compute engine, at DRAM speed on device memory and at
// the pinned link's speed on pinned host memory (written over PCIe). The
// "synchronous" API is asynchronous to the host on device memory; on pinned
// or managed memory, where the host sees the bytes, it holds the host until
// they are set (`holds`), as on real hardware.
CUresult Model::plan_memset(const MemsetRequest& req, int device, Work* work, bool* holds) {
  if (req.elem_size != 1 && req.elem_size != 2 && req.elem_size != 4) return CUDA_ERROR_INVALID_VALUE;
  const size_t row = req.width * req.elem_size;
  if (req.height > 1 && req.pitch < row) return CUDA_ERROR_INVALID_VALUE;
  Allocation a;
  if (!find_locked(req.dst, span(row, req.height, 1, req.pitch, 0), &a) ||
      !(is_device_kind(a.kind) || is_pinned_kind(a.kind)))
    return CUDA_ERROR_INVALID_VALUE;
  const size_t bytes = req.bytes();
  const double gbps = is_pinned_kind(a.kind) ? desc(device).pinned_gbps : desc(device).dram_gbps;
  *work = Work{Engine::Compute, Activity::Memset, static_cast<int64_t>(static_cast<double>(bytes) / gbps),
               us_to_ns(node_.costs.kernel_start_latency), bytes, 1.0, [req] { set_bytes(req); }};
  work->traced.kind = DeviceRecord::Memset;
  work->traced.bytes = bytes;
  work->traced.async = req.async;
  work->traced.dst_kind = memory_kind_at(req.dst, bytes);
  if (holds) *holds = !req.async && (is_pinned_kind(a.kind) || a.kind == MemKind::Managed);
  return CUDA_SUCCESS;
}

CUresult Model::memset(const MemsetRequest& req) {
  if (req.bytes() == 0) return CUDA_SUCCESS;
  wait_for_queue_slot();
  std::shared_ptr<Scheduled> scheduled;
  bool holds = false;
  {
    std::lock_guard lock(mu_);
    CUstream_st* st = nullptr;
    if (CUresult r = resolve_stream(req.stream, req.per_thread, &st)) return r;
    const int64_t submitted = now_ns();
    Work w;
    if (CUresult r = plan_memset(req, st->device, &w, &holds)) return r;
    if (st->capture) {
      NodeParams node;
      node.type = CU_GRAPH_NODE_TYPE_MEMSET;
      node.memset = CUDA_MEMSET_NODE_PARAMS{reinterpret_cast<CUdeviceptr>(req.dst), req.pitch, req.value,
                                            req.elem_size, req.width, req.height};
      return capture_node(*st, std::move(node));
    }
    if (holds)
      if (CUresult r = check_unsafe_call()) return r;
    w.traced.correlation = activity_enter();
    scheduled = submit(*st, StreamOp{StreamOp::Kind::Work, std::move(w), {}, nullptr, nullptr, submitted});
  }
  if (!holds) return CUDA_SUCCESS;
  wait_until_scheduled(scheduled);
  HostWorker::instance().run_through(scheduled->slot.task);
  wait_until(scheduled->slot.end);
  return CUDA_SUCCESS;
}

}  // namespace simgpu::drv
