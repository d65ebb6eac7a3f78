// Device model: stream capture.  While a stream captures, the work submitted
// to it becomes nodes of the capture's graph, each depending on the nodes
// the stream last added; an event recorded in a capturing stream carries
// those nodes to any stream that waits for it, which joins the capture.
// Calls that cannot be captured (synchronizing on the stream, the legacy
// stream's implicit synchronization, "unsafe" calls such as cudaMalloc in
// global mode) fail and invalidate the capture, as on a GPU.
#include <algorithm>
#include <atomic>

#include "model.hpp"

namespace simgpu::drv {
namespace {

thread_local CUstreamCaptureMode t_capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
std::atomic<unsigned long long> g_capture_ids{0};

// Whether `from` is one of `targets` or leads to one through its dependents.
bool leads_to(const CUgraphNode_st* from, const std::vector<CUgraphNode_st*>& targets) {
  std::vector<const CUgraphNode_st*> todo{from};
  std::set<const CUgraphNode_st*> seen;
  while (!todo.empty()) {
    const CUgraphNode_st* n = todo.back();
    todo.pop_back();
    if (std::find(targets.begin(), targets.end(), n) != targets.end()) return true;
    if (!seen.insert(n).second) continue;
    todo.insert(todo.end(), n->dependents.begin(), n->dependents.end());
  }
  return false;
}

void add_unique(std::vector<CUgraphNode_st*>& to, const std::vector<CUgraphNode_st*>& more) {
  for (CUgraphNode_st* n : more)
    if (std::find(to.begin(), to.end(), n) == to.end()) to.push_back(n);
}

}  // namespace

CUresult Model::exchange_capture_mode(CUstreamCaptureMode* mode) {
  if (!mode || *mode > CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_ERROR_INVALID_VALUE;
  std::swap(*mode, t_capture_mode);
  return CUDA_SUCCESS;
}

void Model::invalidate(CaptureSession& session) { session.invalidated = true; }

// A call that cannot be captured and may disturb one (cudaMalloc, a
// synchronous copy, a device synchronize): refused while this thread
// captures, or while another thread captures in global mode, unless this
// thread relaxed its mode.
CUresult Model::check_unsafe_call() {
  if (t_capture_mode == CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_SUCCESS;
  const std::thread::id me = std::this_thread::get_id();
  for (CaptureSession* c : captures_) {
    const bool mine = c->thread == me && c->mode != CU_STREAM_CAPTURE_MODE_RELAXED;
    const bool global = c->thread != me && c->mode == CU_STREAM_CAPTURE_MODE_GLOBAL &&
                        t_capture_mode == CU_STREAM_CAPTURE_MODE_GLOBAL;
    if (mine || global) {
      invalidate(*c);
      return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
  }
  return CUDA_SUCCESS;
}

// The legacy stream synchronizes with every blocking stream of its device,
// which a capturing one cannot do.
CUresult Model::check_implicit_sync(const CUstream_st& s) {
  if (!s.legacy) return CUDA_SUCCESS;
  for (CaptureSession* c : captures_) {
    for (const CUstream_st* t : c->streams) {
      if (t->device == s.device && t->blocking()) {
        invalidate(*c);
        return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
      }
    }
  }
  return CUDA_SUCCESS;
}

CUresult Model::check_not_capturing(const CUstream_st& s) {
  if (!s.capture) return CUDA_SUCCESS;
  invalidate(*s.capture->session);
  return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

CUresult Model::capture_node(CUstream_st& s, NodeParams params, CUgraphNode_st** out) {
  StreamCapture& c = *s.capture;
  if (c.session->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  params.device = s.device;
  if (CUresult r = check_node(params)) return r;
  CUgraphNode_st* node = add_node(*c.session->graph, c.deps, std::move(params));
  c.deps = {node};
  if (out) *out = node;
  return CUDA_SUCCESS;
}

CUresult Model::capture_alloc(CUstream_st& s, size_t bytes, void** out) {
  if (s.capture->session->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  void* p = nullptr;
  if (CUresult r = reserve_graph_memory(bytes, s.device, &p)) return r;
  NodeParams params;
  params.type = CU_GRAPH_NODE_TYPE_MEM_ALLOC;
  params.memory_bytes = bytes;
  params.memory = std::make_shared<GraphMemory>(reinterpret_cast<uintptr_t>(p), bytes, s.device);
  params.memory_address = reinterpret_cast<CUdeviceptr>(p);
  if (CUresult r = capture_node(s, std::move(params))) return r;
  *out = p;
  return CUDA_SUCCESS;
}

CUresult Model::capture_free(CUstream_st& s, void* p) {
  NodeParams params;
  params.type = CU_GRAPH_NODE_TYPE_MEM_FREE;
  params.free_address = reinterpret_cast<CUdeviceptr>(p);
  return capture_node(s, std::move(params));  // only graph memory: check_node refuses the rest
}

CUresult Model::capture_record_event(CUstream_st& s, CUevent e, unsigned flags) {
  StreamCapture& c = *s.capture;
  if (c.session->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  if (flags & CU_EVENT_RECORD_EXTERNAL) {
    NodeParams params;
    params.type = CU_GRAPH_NODE_TYPE_EVENT_RECORD;
    params.event = e;
    return capture_node(s, std::move(params));
  }
  e->captured = c.session;
  e->captured_deps = c.deps;
  return CUDA_SUCCESS;
}

// A stream waiting for an event recorded in a capture joins that capture
// (or, already in it, follows the event's nodes too); a capturing stream
// may only wait for an event from outside as an event-wait node.
CUresult Model::capture_wait_event(CUstream_st& s, CUevent e, unsigned flags) {
  const bool external = flags & CU_EVENT_WAIT_EXTERNAL;
  if (!e->captured && !e->record && !external) return CUDA_SUCCESS;  // never recorded: no-op
  if (!e->captured) {
    if (!external) {
      invalidate(*s.capture->session);
      return CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
    }
    NodeParams params;
    params.type = CU_GRAPH_NODE_TYPE_WAIT_EVENT;
    params.event = e;
    return capture_node(s, std::move(params));
  }
  const std::shared_ptr<CaptureSession>& session = e->captured;
  if (session->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  if (!s.capture) {
    s.capture = std::make_shared<StreamCapture>(StreamCapture{session, e->captured_deps});
    session->streams.insert(&s);
    return CUDA_SUCCESS;
  }
  if (s.capture->session != session) {
    invalidate(*s.capture->session);
    invalidate(*session);
    return CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
  }
  add_unique(s.capture->deps, e->captured_deps);
  return CUDA_SUCCESS;
}

CUresult Model::capture_begin(CUstream s, bool per_thread, CUstreamCaptureMode mode, CUgraph into,
                              const CUgraphNode* deps, size_t count) {
  if (mode > CU_STREAM_CAPTURE_MODE_RELAXED || (count && !deps)) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(mu_);
  CUstream_st* st = nullptr;
  if (CUresult r = resolve_stream(s, per_thread, &st)) return r;
  if (st->legacy) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (st->capture) return CUDA_ERROR_ILLEGAL_STATE;
  if (into && !graphs_.count(into)) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i)
    if (!nodes_.count(deps[i]) || deps[i]->graph != into) return CUDA_ERROR_INVALID_VALUE;
  auto session = std::make_shared<CaptureSession>();
  session->graph = into ? into : new CUgraph_st;
  session->graph_is_callers = into != nullptr;
  if (!into) graphs_.insert(session->graph);
  session->id = ++g_capture_ids;
  session->mode = mode;
  session->origin = st;
  session->thread = std::this_thread::get_id();
  session->streams.insert(st);
  st->capture = std::make_shared<StreamCapture>(StreamCapture{session, std::vector<CUgraphNode_st*>(deps, deps + count)});
  captures_.insert(session.get());
  return CUDA_SUCCESS;
}

CUresult Model::capture_end(CUstream s, bool per_thread, CUgraph* out) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(mu_);
  CUstream_st* st = nullptr;
  if (CUresult r = resolve_stream(s, per_thread, &st)) return r;
  if (!st->capture) return CUDA_ERROR_ILLEGAL_STATE;
  const std::shared_ptr<CaptureSession> session = st->capture->session;
  if (session->origin != st) {
    invalidate(*session);
    return CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
  }
  if (session->mode != CU_STREAM_CAPTURE_MODE_RELAXED && session->thread != std::this_thread::get_id())
    return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
  // Every stream that joined must have been joined back into the origin:
  // its last nodes lead to the origin's.
  bool unjoined = false;
  for (const CUstream_st* t : session->streams)
    for (const CUgraphNode_st* n : t->capture->deps) unjoined |= !leads_to(n, st->capture->deps);
  for (CUstream_st* t : session->streams) t->capture.reset();
  for (CUevent_st* e : events_)
    if (e->captured == session) e->captured.reset();
  captures_.erase(session.get());
  *out = nullptr;
  if (!session->invalidated && !unjoined) {
    *out = session->graph;
    return CUDA_SUCCESS;
  }
  if (!session->graph_is_callers) {
    forget_graph(session->graph);
    delete session->graph;
    release_graph_memory();
  }
  return unjoined ? CUDA_ERROR_STREAM_CAPTURE_UNJOINED : CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
}

CUresult Model::capture_info(CUstream s, bool per_thread, CUstreamCaptureStatus* status, cuuint64_t* id,
                             CUgraph* graph, const CUgraphNode** deps, size_t* count) {
  if (!status) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(mu_);
  CUstream_st* st = nullptr;
  if (CUresult r = resolve_stream(s, per_thread, &st, false)) return r;
  if (!st->capture) {
    *status = CU_STREAM_CAPTURE_STATUS_NONE;
    return CUDA_SUCCESS;
  }
  const StreamCapture& c = *st->capture;
  *status = c.session->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED : CU_STREAM_CAPTURE_STATUS_ACTIVE;
  if (id) *id = c.session->id;
  if (graph) *graph = c.session->graph;
  if (deps) *deps = c.deps.data();  // valid until the stream's next captured call
  if (count) *count = c.deps.size();
  return CUDA_SUCCESS;
}

CUresult Model::capture_update_deps(CUstream s, bool per_thread, const CUgraphNode* deps, size_t count,
                                    unsigned flags) {
  if ((count && !deps) || flags > CU_STREAM_SET_CAPTURE_DEPENDENCIES) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(mu_);
  CUstream_st* st = nullptr;
  if (CUresult r = resolve_stream(s, per_thread, &st)) return r;
  if (!st->capture) return CUDA_ERROR_ILLEGAL_STATE;
  StreamCapture& c = *st->capture;
  std::vector<CUgraphNode_st*> given(deps, deps + count);
  for (CUgraphNode_st* n : given)
    if (!nodes_.count(n) || n->graph != c.session->graph) return CUDA_ERROR_INVALID_VALUE;
  if (flags == CU_STREAM_SET_CAPTURE_DEPENDENCIES) c.deps.clear();
  add_unique(c.deps, given);
  return CUDA_SUCCESS;
}

}  // namespace simgpu::drv
