// Device model: streams, events and host functions, and how work submitted
// to a stream gets its place in simulated time.
//
// An operation is scheduled when it is submitted, at the earliest instant its
// stream, its engine and the legacy default stream's implicit dependencies
// allow.  Two things have no time yet when submitted: a host function (it
// ends when it returns, on simgpu's host thread) and anything queued behind
// one.  Such work waits in its stream's backlog, and an operation on another
// stream that must follow it waits for a marker recorded in that backlog;
// when the host function returns, the backlogs drain in order.
#include <algorithm>
#include <array>
#include <atomic>

#include "../common/clock.hpp"
#include "activity.hpp"
#include "model.hpp"

namespace simgpu::drv {

namespace {

// Stream ids: 1 and 2 like a GPU's legacy and per-thread streams, then up.
std::atomic<unsigned long long> g_stream_ids{2};
std::atomic<uint32_t> g_event_ids{1};

}  // namespace

CUstream_st* Model::per_thread_stream(int dev) {
  // One per thread and device, created on first use and never freed: work
  // queued on it may outlive the thread, and a handful of bytes per thread is
  // cheaper than tracking thread exit.
  thread_local std::array<CUstream_st*, SharedState::kMaxDevices> streams{};
  if (!streams[dev]) {
    streams[dev] = new CUstream_st;
    streams[dev]->device = dev;
    streams[dev]->per_thread = true;
    streams[dev]->id = ++g_stream_ids;
    per_thread_streams_.push_back(streams[dev]);  // kept, and known, for the process's life
  }
  return streams[dev];
}

CUresult Model::resolve_stream(CUstream s, bool per_thread, CUstream_st** out, bool orders) {
  if (!s) s = per_thread ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY;
  if (s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD) {
    int dev = 0;
    if (CUresult r = current_device(&dev)) return r;
    *out = s == CU_STREAM_LEGACY ? &devices_[dev].legacy : per_thread_stream(dev);
    return orders ? check_implicit_sync(**out) : CUDA_SUCCESS;
  }
  if (!streams_.count(s)) return CUDA_ERROR_INVALID_HANDLE;
  *out = s;
  return CUDA_SUCCESS;
}

// Earliest instant new work on s may start: after everything queued on s and,
// by the legacy default stream's rules, after the implicit dependencies (the
// NULL stream waits for all blocking streams and they wait for it).
int64_t Model::stream_ready(const CUstream_st& s, int64_t submit) const {
  const DeviceState& d = devices_[s.device];
  int64_t t = std::max(submit, s.tail);
  if (s.legacy)
    t = std::max(t, d.blocking_tail);
  else if (s.blocking())
    t = std::max(t, d.legacy.tail);
  return t;
}

bool Model::ready_known(const CUstream_st& s) const {
  if (s.unresolved()) return false;
  const DeviceState& d = devices_[s.device];
  if (s.legacy)
    return std::none_of(d.unresolved.begin(), d.unresolved.end(), [](const CUstream_st* x) { return x->blocking(); });
  return !s.blocking() || !d.legacy.unresolved();
}

void Model::wait_until_ready_known(std::unique_lock<std::mutex>& lock, const CUstream_st& s) {
  resolved_.wait(lock, [&] { return ready_known(s); });
}

void Model::wait_until_scheduled(const std::shared_ptr<Scheduled>& op) {
  std::unique_lock lock(mu_);
  resolved_.wait(lock, [&] { return op->done; });
}

void Model::wait_for_queue_slot() {
  int dev = 0;
  if (current_device(&dev) != CUDA_SUCCESS) return;
  for (;;) {
    int64_t until = 0;
    {
      std::unique_lock lock(mu_);
      DeviceState& d = devices_[dev];
      d.in_flight.erase(d.in_flight.begin(), d.in_flight.upper_bound(now_ns()));
      if (d.in_flight.size() + d.backlog_ops < kQueueDepth) return;
      if (d.in_flight.empty()) {
        // Everything queued waits behind a host function.
        resolved_.wait(lock);
        continue;
      }
      until = *d.in_flight.begin();
    }
    wait_until(until);
  }
}

void Model::advance_tail(CUstream_st& s, int64_t t) {
  s.tail = std::max(s.tail, t);
  // A blocking stream's work delays the legacy stream's next operation too.
  DeviceState& d = devices_[s.device];
  if (!s.legacy && s.blocking()) d.blocking_tail = std::max(d.blocking_tail, s.tail);
}

Slot Model::enqueue(CUstream_st& s, Work work, int64_t submit) {
  DeviceState& d = devices_[s.device];
  const int64_t ready = stream_ready(s, submit + work.start_latency);
  // The engines the work occupies, and what NVML sees on each device.
  struct Claim {
    DeviceState* device;
    Engine engine;
    Activity activity;
  };
  std::vector<Claim> claims{{&d, work.engine, work.activity}};
  if (work.peer_src >= 0)  // over the link: sent by one device, received by the other
    claims = {{&devices_[work.peer_src], Engine::DeviceToHost, Activity::CopyD2H},
              {&devices_[work.peer_dst], Engine::HostToDevice, Activity::CopyH2D}};
  Slot slot;
  slot.start = ready;
  for (const Claim& c : claims) slot.start = std::max(slot.start, c.device->engine_free[static_cast<size_t>(c.engine)]);
  const int64_t duration = std::max<int64_t>(work.duration, 0);
  // With engines shared between processes, one claim also waits for the
  // other processes' work on that engine (a link's two ends stay local).
  const bool claimed = claims.size() == 1 && shared_.shares_engines();
  if (claimed)
    slot.start = shared_.claim(d.node_index, static_cast<int>(work.engine), work.activity, slot.start, duration,
                               work.bytes, work.sm_fraction);
  slot.end = slot.start + duration;
  for (const Claim& c : claims) {
    c.device->engine_free[static_cast<size_t>(c.engine)] = slot.end;
    if (!claimed)  // claim() logged it already
      shared_.record(c.device->node_index, c.activity, slot.start, slot.end, work.bytes, work.sm_fraction);
  }
  advance_tail(s, slot.end);
  d.in_flight.insert(slot.end);
  if (work.traced.kind != DeviceRecord::None) {
    DeviceRecord r = work.traced;
    r.device = static_cast<uint32_t>(s.device);
    r.stream_id = s.id;
    r.start_ns = slot.start;
    r.end_ns = slot.end;
    activity_record(r);
  }
  // Queued under the lock, so byte tasks are ordered as the model scheduled them.
  if (work.move) slot.task = HostWorker::instance().push_bytes(slot.start, std::move(work.move));
  return slot;
}

// The legacy stream follows every blocking stream and they follow it: where
// the stream to follow has unscheduled work, s waits for a marker placed
// behind that work.
void Model::add_implicit_waits(CUstream_st& s, int64_t submit) {
  DeviceState& d = devices_[s.device];
  auto follow = [&](CUstream_st& ahead) {
    auto marker = std::make_shared<Marker>();
    ahead.backlog.push_back(StreamOp{StreamOp::Kind::Record, {}, {}, marker, nullptr, submit});
    s.backlog.push_back(StreamOp{StreamOp::Kind::Wait, {}, {}, marker, nullptr, submit});
    d.backlog_ops += 2;
    d.unresolved.insert(&s);
  };
  if (s.legacy) {
    for (CUstream_st* other : std::vector<CUstream_st*>(d.unresolved.begin(), d.unresolved.end()))
      if (other != &s && other->blocking()) follow(*other);
  } else if (s.blocking() && d.legacy.unresolved()) {
    follow(d.legacy);
  }
}

std::shared_ptr<Scheduled> Model::submit(CUstream_st& s, StreamOp op) {
  if (!op.scheduled) op.scheduled = std::make_shared<Scheduled>();
  std::shared_ptr<Scheduled> result = op.scheduled;
  add_implicit_waits(s, op.submit);
  const bool must_wait = s.unresolved() || (op.kind == StreamOp::Kind::Wait && !op.marker->resolved);
  if (!must_wait) {
    schedule(s, op);
    return result;
  }
  s.backlog.push_back(std::move(op));
  DeviceState& d = devices_[s.device];
  ++d.backlog_ops;
  d.unresolved.insert(&s);
  return result;
}

void Model::schedule(CUstream_st& s, StreamOp& op) {
  switch (op.kind) {
    case StreamOp::Kind::Work: {
      const Slot slot = enqueue(s, std::move(op.work), op.submit);
      if (op.scheduled) op.scheduled->slot = slot;
      break;
    }
    case StreamOp::Kind::Record:
      op.marker->time = stream_ready(s, op.submit);
      op.marker->resolved = true;
      break;
    case StreamOp::Kind::Wait:
      advance_tail(s, op.marker->time);
      break;
    case StreamOp::Kind::Task: {
      const int64_t at = stream_ready(s, op.submit);
      const TaskKey task = HostWorker::instance().push_bytes(at, std::move(op.fn));
      if (op.scheduled) op.scheduled->slot = Slot{at, at, task};
      break;
    }
    case StreamOp::Kind::HostFunction: {
      // Runs when the stream reaches it, after the bytes ahead of it landed;
      // the stream is held until it returns.
      const int64_t at = stream_ready(s, op.submit);
      s.held = true;
      devices_[s.device].unresolved.insert(&s);
      CUstream_st* stream = &s;
      HostWorker::instance().push_host_function(at, [this, stream, fn = std::move(op.fn)] {
        fn();
        host_function_returned(stream);
      });
      if (op.scheduled) op.scheduled->slot = Slot{at, at, {}};
      break;
    }
  }
  if (op.scheduled) op.scheduled->done = true;  // implicit markers have no one waiting
}

void Model::host_function_returned(CUstream_st* s) {
  std::lock_guard lock(mu_);
  s->held = false;
  const int64_t now = now_ns();
  advance_tail(*s, now);
  DeviceState& d = devices_[s->device];
  d.host_tail = std::max(d.host_tail, now);
  drain_backlogs();
}

// Schedules backlog heads until nothing more can move: a host function holds
// its stream again, or a wait's marker is still unresolved.  Markers may
// cross streams and devices, so it sweeps them all until a sweep changes
// nothing.
void Model::drain_backlogs() {
  for (bool progress = true; progress;) {
    progress = false;
    for (DeviceState& d : devices_) {
      for (CUstream_st* s : std::vector<CUstream_st*>(d.unresolved.begin(), d.unresolved.end())) {
        while (!s->held && !s->backlog.empty()) {
          StreamOp& head = s->backlog.front();
          if (head.kind == StreamOp::Kind::Wait && !head.marker->resolved) break;
          StreamOp op = std::move(head);
          s->backlog.pop_front();
          --d.backlog_ops;
          schedule(*s, op);
          progress = true;
        }
        if (s->unresolved()) continue;
        d.unresolved.erase(s);
        if (s->destroyed) delete s;
      }
    }
  }
  resolved_.notify_all();
}

// --- streams --------------------------------------------------------------------

CUresult Model::stream_create(unsigned flags, int priority, CUstream* out) {
  int dev = 0;
  if (CUresult r = current_device(&dev)) return r;
  if (flags & ~static_cast<unsigned>(CU_STREAM_NON_BLOCKING)) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(mu_);
  auto* s = new CUstream_st;
  s->device = dev;
  s->flags = flags;
  s->priority = std::clamp(priority, -5, 0);  // H100/H200 range: [-5, 0]
  s->id = ++g_stream_ids;
  streams_.insert(s);
  *out = s;
  return CUDA_SUCCESS;
}

CUresult Model::stream_destroy(CUstream s) {
  std::lock_guard lock(mu_);
  // Work already queued still completes on the engines; only the handle goes
  // (the stream itself once its backlog has drained).
  if (!streams_.erase(s)) return CUDA_ERROR_INVALID_HANDLE;
  retire_stream(s);
  return CUDA_SUCCESS;
}

CUresult Model::stream_query(CUstream s, bool per_thread) {
  int64_t ready = 0;
  {
    std::lock_guard lock(mu_);
    CUstream_st* st = nullptr;
    if (CUresult r = resolve_stream(s, per_thread, &st)) return r;
    if (CUresult r = check_not_capturing(*st)) return r;
    if (!ready_known(*st)) return CUDA_ERROR_NOT_READY;
    ready = stream_ready(*st, 0);
  }
  return now_ns() >= ready && HostWorker::instance().bytes_done_through(ready) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult Model::stream_synchronize(CUstream s, bool per_thread, bool traced) {
  const int64_t start = now_ns();
  int64_t until = 0;
  int device = 0;
  uint64_t stream_id = 0;
  {
    std::unique_lock lock(mu_);
    CUstream_st* st = nullptr;
    if (CUresult r = resolve_stream(s, per_thread, &st)) return r;
    if (CUresult r = check_not_capturing(*st)) return r;
    wait_until_ready_known(lock, *st);
    until = stream_ready(*st, 0);
    device = st->device, stream_id = st->id;
  }
  wait_until(until);
  HostWorker::instance().wait_bytes_through(until);
  synchronized();
  if (traced) activity_sync(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, device, stream_id, 0, start);
  return CUDA_SUCCESS;
}

// What every synchronize ends with: its host cost, and memory pools giving
// back what they hold beyond their release threshold.
void Model::synchronized() {
  {
    std::lock_guard lock(mu_);
    release_pool_memory();
  }
  spend_host_time(us_to_ns(node_.costs.sync));
}

CUresult Model::stream_wait_event(CUstream s, CUevent e, bool per_thread, unsigned flags) {
  const int64_t start = now_ns();
  int device = 0;
  uint64_t stream_id = 0;
  uint32_t event_id = 0;
  {
    std::lock_guard lock(mu_);
    CUstream_st* st = nullptr;
    if (CUresult r = resolve_stream(s, per_thread, &st)) return r;
    if (!events_.count(e)) return CUDA_ERROR_INVALID_HANDLE;
    if (e->captured || st->capture) return capture_wait_event(*st, e, flags);
    if (!e->record) return CUDA_SUCCESS;  // waiting on a never-recorded event is a no-op
    submit(*st, StreamOp{StreamOp::Kind::Wait, {}, {}, e->record, nullptr, now_ns()});
    device = st->device, stream_id = st->id, event_id = e->id;
  }
  // The host does not wait: the record spans the call.
  activity_sync(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT, device, stream_id, event_id, start);
  return CUDA_SUCCESS;
}

CUresult Model::stream_get(CUstream s, bool per_thread, unsigned* flags, int* priority) {
  std::lock_guard lock(mu_);
  CUstream_st* st = nullptr;
  if (CUresult r = resolve_stream(s, per_thread, &st, false)) return r;
  if (flags) *flags = st->flags;
  if (priority) *priority = st->priority;
  return CUDA_SUCCESS;
}

CUresult Model::stream_identity(CUstream s, bool per_thread, unsigned long long* id, int* device, CUcontext* ctx) {
  std::lock_guard lock(mu_);
  CUstream_st* st = nullptr;
  if (CUresult r = resolve_stream(s, per_thread, &st, false)) return r;
  if (id) *id = st->legacy ? 1 : st->id;
  if (device) *device = st->device;
  if (ctx) *ctx = &devices_[st->device].primary;
  return CUDA_SUCCESS;
}

CUresult Model::host_function(CUstream s, bool per_thread, std::function<void()> fn,
                              const CUDA_HOST_NODE_PARAMS* node) {
  if (!fn) return CUDA_ERROR_INVALID_VALUE;
  wait_for_queue_slot();
  std::lock_guard lock(mu_);
  CUstream_st* st = nullptr;
  if (CUresult r = resolve_stream(s, per_thread, &st)) return r;
  if (st->capture) {
    if (!node) return check_not_capturing(*st);
    NodeParams params;
    params.type = CU_GRAPH_NODE_TYPE_HOST;
    params.host = *node;
    return capture_node(*st, std::move(params));
  }
  submit(*st, StreamOp{StreamOp::Kind::HostFunction, {}, std::move(fn), nullptr, nullptr, now_ns()});
  return CUDA_SUCCESS;
}

// --- events ---------------------------------------------------------------------

CUresult Model::event_create(unsigned flags, CUevent* out) {
  int dev = 0;
  if (CUresult r = current_device(&dev)) return r;
  std::lock_guard lock(mu_);
  auto* e = new CUevent_st;
  e->device = dev;
  e->id = g_event_ids.fetch_add(1, std::memory_order_relaxed);
  e->flags = flags;
  events_.insert(e);
  *out = e;
  return CUDA_SUCCESS;
}

CUresult Model::event_destroy(CUevent e) {
  std::lock_guard lock(mu_);
  if (!events_.erase(e)) return CUDA_ERROR_INVALID_HANDLE;
  delete e;  // a pending record keeps its marker alive for whoever waits on it
  return CUDA_SUCCESS;
}

CUresult Model::event_record(CUevent e, CUstream s, bool per_thread, unsigned flags) {
  std::lock_guard lock(mu_);
  if (!events_.count(e)) return CUDA_ERROR_INVALID_HANDLE;
  CUstream_st* st = nullptr;
  if (CUresult r = resolve_stream(s, per_thread, &st)) return r;
  if (st->capture) return capture_record_event(*st, e, flags);
  if (flags & CU_EVENT_RECORD_EXTERNAL) return CUDA_ERROR_INVALID_VALUE;  // only while capturing
  e->captured.reset();
  e->device = st->device;
  e->record = std::make_shared<Marker>();
  submit(*st, StreamOp{StreamOp::Kind::Record, {}, {}, e->record, nullptr, now_ns()});
  return CUDA_SUCCESS;
}

CUresult Model::event_query(CUevent e) {
  int64_t time = 0;
  {
    std::lock_guard lock(mu_);
    if (!events_.count(e)) return CUDA_ERROR_INVALID_HANDLE;
    if (e->captured) return CUDA_ERROR_CAPTURED_EVENT;
    if (!e->record) return CUDA_SUCCESS;
    if (!e->record->resolved) return CUDA_ERROR_NOT_READY;
    time = e->record->time;
  }
  return now_ns() >= time && HostWorker::instance().bytes_done_through(time) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult Model::event_synchronize(CUevent e) {
  const int64_t start = now_ns();
  int64_t until = 0;
  int device = 0;
  uint32_t event_id = 0;
  {
    std::unique_lock lock(mu_);
    if (!events_.count(e)) return CUDA_ERROR_INVALID_HANDLE;
    device = e->device, event_id = e->id;
    if (e->captured) return CUDA_ERROR_CAPTURED_EVENT;
    if (MarkerRef record = e->record) {
      resolved_.wait(lock, [&] { return record->resolved; });
      until = record->time;
    }
  }
  wait_until(until);
  HostWorker::instance().wait_bytes_through(until);
  synchronized();
  activity_sync(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE, device, kNotApplicable, event_id, start);
  return CUDA_SUCCESS;
}

CUresult Model::event_elapsed(float* ms, CUevent start, CUevent end) {
  if (!ms) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(mu_);
  if (!events_.count(start) || !events_.count(end)) return CUDA_ERROR_INVALID_HANDLE;
  if (!start->record || !end->record) return CUDA_ERROR_INVALID_HANDLE;
  if ((start->flags | end->flags) & CU_EVENT_DISABLE_TIMING) return CUDA_ERROR_INVALID_HANDLE;
  if (!start->record->resolved || !end->record->resolved) return CUDA_ERROR_NOT_READY;
  const int64_t a = start->record->time, b = end->record->time;
  if (now_ns() < std::max(a, b)) return CUDA_ERROR_NOT_READY;
  *ms = static_cast<float>(static_cast<double>(b - a) / 1e6);
  return CUDA_SUCCESS;
}

}  // namespace simgpu::drv
