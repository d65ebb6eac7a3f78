// Device model core: initialization, contexts, streams, events and the
// scheduling of work on engines in simulated (= monotonic) time.
#include "model.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "../common/clock.hpp"

namespace simgpu::drv {
namespace {

std::atomic<Model*> g_model{nullptr};
thread_local CUcontext t_current = nullptr;

// A CUDA_VISIBLE_DEVICES entry: an ordinal or a UUID prefix ("GPU-5a1c...").
int parse_visible_entry(std::string_view entry, const NodeDesc& node) {
  while (!entry.empty() && entry.front() == ' ') entry.remove_prefix(1);
  if (entry.empty()) return -1;
  if (entry.rfind("GPU-", 0) == 0) {
    for (size_t i = 0; i < node.devices.size(); ++i)
      if (node.devices[i].uuid.rfind(entry, 0) == 0) return static_cast<int>(i);
    return -1;
  }
  char* end = nullptr;
  const std::string text(entry);
  const long v = std::strtol(text.c_str(), &end, 10);
  if (end == text.c_str() || v < 0 || v >= static_cast<long>(node.devices.size())) return -1;
  return static_cast<int>(v);
}

}  // namespace

std::vector<int> Model::visible_devices(const NodeDesc& node) {
  std::vector<int> visible;
  const char* env = std::getenv("CUDA_VISIBLE_DEVICES");
  if (!env) {
    for (size_t i = 0; i < node.devices.size(); ++i) visible.push_back(static_cast<int>(i));
    return visible;
  }
  // Like the real driver: the list ends at the first invalid or repeated entry.
  std::string_view rest(env);
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const int index = parse_visible_entry(rest.substr(0, comma), node);
    if (index < 0 || std::find(visible.begin(), visible.end(), index) != visible.end()) break;
    visible.push_back(index);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  visible.resize(std::min<size_t>(visible.size(), SharedState::kMaxDevices));
  return visible;
}

Model::Model(const NodeDesc& node, std::vector<int> visible)
    : node_(node), shared_(SharedState::of(node)), devices_(visible.size()) {
  for (size_t i = 0; i < visible.size(); ++i) {
    DeviceState& d = devices_[i];
    d.desc = &node_.devices[visible[i]];
    d.node_index = visible[i];
    d.legacy.device = static_cast<int>(i);
    d.legacy.legacy = true;
    d.primary = CUctx_st{static_cast<int>(i), true};
    contexts_.insert(&d.primary);
  }
}

CUresult Model::init() {
  static const CUresult result = [] {
    const auto& node = process_node();
    if (!node) return CUDA_ERROR_NO_DEVICE;  // reported on stderr already
    std::vector<int> visible = visible_devices(*node);
    if (visible.empty()) return CUDA_ERROR_NO_DEVICE;
    g_model.store(new Model(*node, std::move(visible)));  // lives until exit
    return CUDA_SUCCESS;
  }();
  return result;
}

Model* Model::instance() { return g_model.load(std::memory_order_acquire); }

// --- contexts -----------------------------------------------------------------

CUresult Model::primary_retain(int dev, CUcontext* out) {
  if (dev < 0 || dev >= device_count()) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard lock(mu_);
  ++devices_[dev].primary_refs;
  shared_.attach_process(devices_[dev].node_index);
  *out = &devices_[dev].primary;
  return CUDA_SUCCESS;
}

CUresult Model::primary_release(int dev) {
  if (dev < 0 || dev >= device_count()) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard lock(mu_);
  if (devices_[dev].primary_refs == 0) return CUDA_ERROR_INVALID_CONTEXT;
  // The context stays usable at zero references: simgpu never tears a device
  // down, so a late call from an atexit handler still finds its memory.
  --devices_[dev].primary_refs;
  return CUDA_SUCCESS;
}

CUresult Model::primary_state(int dev, unsigned* flags, int* active) {
  if (dev < 0 || dev >= device_count()) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard lock(mu_);
  if (flags) *flags = devices_[dev].primary_flags;
  if (active) *active = devices_[dev].primary_refs > 0;
  return CUDA_SUCCESS;
}

CUresult Model::primary_set_flags(int dev, unsigned flags) {
  if (dev < 0 || dev >= device_count()) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard lock(mu_);
  devices_[dev].primary_flags = flags;
  return CUDA_SUCCESS;
}

CUresult Model::ctx_create(int dev, CUcontext* out) {
  if (dev < 0 || dev >= device_count()) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard lock(mu_);
  auto* ctx = new CUctx_st{dev, false};
  contexts_.insert(ctx);
  shared_.attach_process(devices_[dev].node_index);
  t_current = ctx;
  *out = ctx;
  return CUDA_SUCCESS;
}

CUresult Model::ctx_destroy(CUcontext ctx) {
  std::lock_guard lock(mu_);
  if (!contexts_.count(ctx) || ctx->primary) return CUDA_ERROR_INVALID_CONTEXT;
  contexts_.erase(ctx);
  if (t_current == ctx) t_current = nullptr;
  delete ctx;
  return CUDA_SUCCESS;
}

CUresult Model::set_current(CUcontext ctx) {
  std::lock_guard lock(mu_);
  if (ctx && !contexts_.count(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  t_current = ctx;
  return CUDA_SUCCESS;
}

CUcontext Model::current() { return t_current; }

CUresult Model::current_device(int* dev) {
  if (!t_current) return CUDA_ERROR_INVALID_CONTEXT;
  *dev = t_current->device;
  return CUDA_SUCCESS;
}

CUresult Model::context_device(CUcontext ctx, int* dev) {
  std::lock_guard lock(mu_);
  if (!contexts_.count(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  *dev = ctx->device;
  return CUDA_SUCCESS;
}

int64_t Model::device_idle_time(int dev) const {
  const DeviceState& d = devices_[dev];
  int64_t t = std::max(d.legacy.tail, d.blocking_tail);
  for (int64_t e : d.engine_free) t = std::max(t, e);
  return t;
}

CUresult Model::ctx_synchronize(CUcontext ctx) {
  int64_t until = 0;
  {
    std::lock_guard lock(mu_);
    if (!ctx) ctx = t_current;
    if (!ctx || !contexts_.count(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
    until = device_idle_time(ctx->device);
  }
  wait_until(until);
  HostWorker::instance().wait_bytes_through(until);
  spend_host_time(us_to_ns(node_.costs.sync));
  return CUDA_SUCCESS;
}

// --- scheduling -----------------------------------------------------------------

CUstream_st* Model::per_thread_stream(int dev) {
  // One per thread and device, created on first use and never freed: work
  // queued on it may outlive the thread, and a handful of bytes per thread is
  // cheaper than tracking thread exit.
  thread_local std::array<CUstream_st*, SharedState::kMaxDevices> streams{};
  if (!streams[dev]) {
    streams[dev] = new CUstream_st;
    streams[dev]->device = dev;
    streams[dev]->per_thread = true;
  }
  return streams[dev];
}

CUresult Model::resolve_stream(CUstream s, bool per_thread, CUstream_st** out) {
  if (!s) s = per_thread ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY;
  if (s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD) {
    int dev = 0;
    if (CUresult r = current_device(&dev)) return r;
    *out = s == CU_STREAM_LEGACY ? &devices_[dev].legacy : per_thread_stream(dev);
    return CUDA_SUCCESS;
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

void Model::wait_for_queue_slot() {
  int dev = 0;
  if (current_device(&dev) != CUDA_SUCCESS) return;
  for (;;) {
    int64_t until = 0;
    {
      std::lock_guard lock(mu_);
      std::multiset<int64_t>& q = devices_[dev].in_flight;
      q.erase(q.begin(), q.upper_bound(now_ns()));
      if (q.size() < kQueueDepth) return;
      until = *q.begin();
    }
    wait_until(until);
  }
}

Slot Model::enqueue(CUstream_st& s, Work work) {
  DeviceState& d = devices_[s.device];
  const int64_t ready = stream_ready(s, now_ns() + work.start_latency);
  int64_t& engine = d.engine_free[static_cast<size_t>(work.engine)];
  Slot slot;
  slot.start = std::max(ready, engine);
  slot.end = slot.start + std::max<int64_t>(work.duration, 0);
  engine = slot.end;
  s.tail = slot.end;
  if (!s.legacy && s.blocking()) d.blocking_tail = std::max(d.blocking_tail, slot.end);
  d.in_flight.insert(slot.end);
  shared_.record(d.node_index, work.activity, slot.start, slot.end, work.bytes, work.sm_fraction);
  // Queued under the lock, so byte tasks are ordered as the model scheduled them.
  if (work.move) slot.task = HostWorker::instance().push_bytes(slot.start, std::move(work.move));
  return slot;
}

int64_t Model::max_idle_time() const {
  int64_t t = 0;
  for (int dev = 0; dev < device_count(); ++dev) t = std::max(t, device_idle_time(dev));
  return t;
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
  streams_.insert(s);
  *out = s;
  return CUDA_SUCCESS;
}

CUresult Model::stream_destroy(CUstream s) {
  std::lock_guard lock(mu_);
  // Work already queued still completes on the engines; only the handle goes.
  if (!streams_.erase(s)) return CUDA_ERROR_INVALID_HANDLE;
  delete s;
  return CUDA_SUCCESS;
}

CUresult Model::stream_query(CUstream s, bool per_thread) {
  int64_t ready = 0;
  {
    std::lock_guard lock(mu_);
    CUstream_st* st = nullptr;
    if (CUresult r = resolve_stream(s, per_thread, &st)) return r;
    ready = stream_ready(*st, 0);
  }
  return now_ns() >= ready && HostWorker::instance().bytes_done_through(ready) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult Model::stream_synchronize(CUstream s, bool per_thread) {
  int64_t until = 0;
  {
    std::lock_guard lock(mu_);
    CUstream_st* st = nullptr;
    if (CUresult r = resolve_stream(s, per_thread, &st)) return r;
    until = stream_ready(*st, 0);
  }
  wait_until(until);
  HostWorker::instance().wait_bytes_through(until);
  spend_host_time(us_to_ns(node_.costs.sync));
  return CUDA_SUCCESS;
}

CUresult Model::stream_wait_event(CUstream s, CUevent e, bool per_thread) {
  std::lock_guard lock(mu_);
  CUstream_st* st = nullptr;
  if (CUresult r = resolve_stream(s, per_thread, &st)) return r;
  if (!events_.count(e)) return CUDA_ERROR_INVALID_HANDLE;
  if (!e->recorded) return CUDA_SUCCESS;  // waiting on a never-recorded event is a no-op
  st->tail = std::max(st->tail, e->time);
  // A blocking stream's wait delays the legacy stream's next operation too.
  if (!st->legacy && st->blocking()) {
    DeviceState& d = devices_[st->device];
    d.blocking_tail = std::max(d.blocking_tail, st->tail);
  }
  return CUDA_SUCCESS;
}

CUresult Model::stream_get(CUstream s, bool per_thread, unsigned* flags, int* priority) {
  std::lock_guard lock(mu_);
  CUstream_st* st = nullptr;
  if (CUresult r = resolve_stream(s, per_thread, &st)) return r;
  if (flags) *flags = st->flags;
  if (priority) *priority = st->priority;
  return CUDA_SUCCESS;
}

// --- events ---------------------------------------------------------------------

CUresult Model::event_create(unsigned flags, CUevent* out) {
  int dev = 0;
  if (CUresult r = current_device(&dev)) return r;
  std::lock_guard lock(mu_);
  auto* e = new CUevent_st;
  e->device = dev;
  e->flags = flags;
  events_.insert(e);
  *out = e;
  return CUDA_SUCCESS;
}

CUresult Model::event_destroy(CUevent e) {
  std::lock_guard lock(mu_);
  if (!events_.erase(e)) return CUDA_ERROR_INVALID_HANDLE;
  delete e;
  return CUDA_SUCCESS;
}

CUresult Model::event_record(CUevent e, CUstream s, bool per_thread) {
  std::lock_guard lock(mu_);
  if (!events_.count(e)) return CUDA_ERROR_INVALID_HANDLE;
  CUstream_st* st = nullptr;
  if (CUresult r = resolve_stream(s, per_thread, &st)) return r;
  e->device = st->device;
  e->time = stream_ready(*st, now_ns());
  e->recorded = true;
  return CUDA_SUCCESS;
}

CUresult Model::event_query(CUevent e) {
  int64_t time = 0;
  {
    std::lock_guard lock(mu_);
    if (!events_.count(e)) return CUDA_ERROR_INVALID_HANDLE;
    if (!e->recorded) return CUDA_SUCCESS;
    time = e->time;
  }
  return now_ns() >= time && HostWorker::instance().bytes_done_through(time) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult Model::event_synchronize(CUevent e) {
  int64_t until = 0;
  {
    std::lock_guard lock(mu_);
    if (!events_.count(e)) return CUDA_ERROR_INVALID_HANDLE;
    if (e->recorded) until = e->time;
  }
  wait_until(until);
  HostWorker::instance().wait_bytes_through(until);
  spend_host_time(us_to_ns(node_.costs.sync));
  return CUDA_SUCCESS;
}

CUresult Model::event_elapsed(float* ms, CUevent start, CUevent end) {
  if (!ms) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(mu_);
  if (!events_.count(start) || !events_.count(end)) return CUDA_ERROR_INVALID_HANDLE;
  if (!start->recorded || !end->recorded) return CUDA_ERROR_INVALID_HANDLE;
  if ((start->flags | end->flags) & CU_EVENT_DISABLE_TIMING) return CUDA_ERROR_INVALID_HANDLE;
  if (now_ns() < std::max(start->time, end->time)) return CUDA_ERROR_NOT_READY;
  *ms = static_cast<float>(static_cast<double>(end->time - start->time) / 1e6);
  return CUDA_SUCCESS;
}

}  // namespace simgpu::drv
