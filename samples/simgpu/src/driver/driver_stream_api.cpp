// Driver API entry points that put host work into streams (stream callbacks
// and host functions) and capture streams into graphs.
#include "driver_graph_api.hpp"

// cuda.h maps these names to their newest variants; the older exports exist
// too and are defined below under their own names.
#undef cuStreamBeginCapture
#undef cuStreamGetCaptureInfo
#undef cuStreamUpdateCaptureDependencies
#undef cuStreamEndCapture
#undef cuStreamIsCapturing
#undef cuStreamBeginCaptureToGraph

using simgpu::drv::Model;
using simgpu::drv::with_model;

namespace {

template <bool PT>
CUresult cuStreamAddCallback_impl(CUstream s, CUstreamCallback callback, void* user_data, unsigned flags) {
  if (!callback || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  // The callback is told the stream as the caller named it (NULL stays NULL).
  return with_model([&](Model& m) {
    return m.host_function(s, PT, [callback, s, user_data] { callback(s, CUDA_SUCCESS, user_data); });
  });
}

template <bool PT>
CUresult cuLaunchHostFunc_impl(CUstream s, CUhostFn fn, void* user_data) {
  if (!fn) return CUDA_ERROR_INVALID_VALUE;
  const CUDA_HOST_NODE_PARAMS node{fn, user_data};  // what a capture records
  return with_model([&](Model& m) { return m.host_function(s, PT, [fn, user_data] { fn(user_data); }, &node); });
}

// The CUDA 10.0 form captured in global mode.
template <bool PT>
CUresult cuStreamBeginCapture_impl(CUstream s) {
  return with_model([&](Model& m) { return m.capture_begin(s, PT, CU_STREAM_CAPTURE_MODE_GLOBAL, nullptr, nullptr, 0); });
}

template <bool PT>
CUresult cuStreamBeginCapture_v2_impl(CUstream s, CUstreamCaptureMode mode) {
  return with_model([&](Model& m) { return m.capture_begin(s, PT, mode, nullptr, nullptr, 0); });
}

template <bool PT>
CUresult cuStreamBeginCaptureToGraph_impl(CUstream s, CUgraph g, const CUgraphNode* deps,
                                          const CUgraphEdgeData* data, size_t count, CUstreamCaptureMode mode) {
  if (!g) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = simgpu::drv::graph_api::edge_data_in(data, count)) return r;
  return with_model([&](Model& m) { return m.capture_begin(s, PT, mode, g, deps, count); });
}

template <bool PT>
CUresult cuStreamEndCapture_impl(CUstream s, CUgraph* g) {
  return with_model([&](Model& m) { return m.capture_end(s, PT, g); });
}

template <bool PT>
CUresult cuStreamIsCapturing_impl(CUstream s, CUstreamCaptureStatus* status) {
  return with_model([&](Model& m) { return m.capture_info(s, PT, status, nullptr, nullptr, nullptr, nullptr); });
}

template <bool PT>
CUresult cuStreamGetCaptureInfo_v3_impl(CUstream s, CUstreamCaptureStatus* status, cuuint64_t* id, CUgraph* g,
                                        const CUgraphNode** deps, const CUgraphEdgeData** data, size_t* count) {
  if (data && !deps) return CUDA_ERROR_INVALID_VALUE;
  // Every captured edge is a plain dependency: zeroed edge data for each.
  thread_local std::vector<CUgraphEdgeData> plain;
  return with_model([&](Model& m) {
    size_t n = 0;
    const CUresult r = m.capture_info(s, PT, status, id, g, deps, &n);
    if (count) *count = n;
    if (r == CUDA_SUCCESS && data) {
      plain.assign(n, CUgraphEdgeData{});
      *data = plain.data();
    }
    return r;
  });
}

template <bool PT>
CUresult cuStreamGetCaptureInfo_v2_impl(CUstream s, CUstreamCaptureStatus* status, cuuint64_t* id, CUgraph* g,
                                        const CUgraphNode** deps, size_t* count) {
  return cuStreamGetCaptureInfo_v3_impl<PT>(s, status, id, g, deps, nullptr, count);
}

template <bool PT>
CUresult cuStreamGetCaptureInfo_impl(CUstream s, CUstreamCaptureStatus* status, cuuint64_t* id) {
  return cuStreamGetCaptureInfo_v3_impl<PT>(s, status, id, nullptr, nullptr, nullptr, nullptr);
}

template <bool PT>
CUresult cuStreamUpdateCaptureDependencies_v2_impl(CUstream s, CUgraphNode* deps, const CUgraphEdgeData* data,
                                                   size_t count, unsigned flags) {
  if (CUresult r = simgpu::drv::graph_api::edge_data_in(data, count)) return r;
  return with_model([&](Model& m) { return m.capture_update_deps(s, PT, deps, count, flags); });
}

template <bool PT>
CUresult cuStreamUpdateCaptureDependencies_impl(CUstream s, CUgraphNode* deps, size_t count, unsigned flags) {
  return cuStreamUpdateCaptureDependencies_v2_impl<PT>(s, deps, nullptr, count, flags);
}

}  // namespace

SIMGPU_DRIVER_DUAL(cuStreamAddCallback, _ptsz, (CUstream s, CUstreamCallback callback, void* user_data, unsigned int flags),
                   (s, callback, user_data, flags))
SIMGPU_DRIVER_DUAL(cuLaunchHostFunc, _ptsz, (CUstream s, CUhostFn fn, void* user_data), (s, fn, user_data))
SIMGPU_DRIVER_DUAL(cuStreamBeginCapture, _ptsz, (CUstream s), (s))
SIMGPU_DRIVER_DUAL(cuStreamBeginCapture_v2, _ptsz, (CUstream s, CUstreamCaptureMode mode), (s, mode))
SIMGPU_DRIVER_DUAL(cuStreamBeginCaptureToGraph, _ptsz,
                   (CUstream s, CUgraph g, const CUgraphNode* deps, const CUgraphEdgeData* data, size_t count,
                    CUstreamCaptureMode mode),
                   (s, g, deps, data, count, mode))
SIMGPU_DRIVER_DUAL(cuStreamEndCapture, _ptsz, (CUstream s, CUgraph* g), (s, g))
SIMGPU_DRIVER_DUAL(cuStreamIsCapturing, _ptsz, (CUstream s, CUstreamCaptureStatus* status), (s, status))
SIMGPU_DRIVER_DUAL(cuStreamGetCaptureInfo, _ptsz, (CUstream s, CUstreamCaptureStatus* status, cuuint64_t* id),
                   (s, status, id))
SIMGPU_DRIVER_DUAL(cuStreamGetCaptureInfo_v2, _ptsz,
                   (CUstream s, CUstreamCaptureStatus* status, cuuint64_t* id, CUgraph* g, const CUgraphNode** deps,
                    size_t* count),
                   (s, status, id, g, deps, count))
SIMGPU_DRIVER_DUAL(cuStreamGetCaptureInfo_v3, _ptsz,
                   (CUstream s, CUstreamCaptureStatus* status, cuuint64_t* id, CUgraph* g, const CUgraphNode** deps,
                    const CUgraphEdgeData** data, size_t* count),
                   (s, status, id, g, deps, data, count))
SIMGPU_DRIVER_DUAL(cuStreamUpdateCaptureDependencies, _ptsz,
                   (CUstream s, CUgraphNode* deps, size_t count, unsigned int flags), (s, deps, count, flags))
SIMGPU_DRIVER_DUAL(cuStreamUpdateCaptureDependencies_v2, _ptsz,
                   (CUstream s, CUgraphNode* deps, const CUgraphEdgeData* data, size_t count, unsigned int flags),
                   (s, deps, data, count, flags))

extern "C" CUresult CUDAAPI cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  return Model::exchange_capture_mode(mode);
}
