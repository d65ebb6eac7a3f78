// Device model core: initialization, contexts, streams, events and the
// scheduling of work on engines in simulated (= monotonic) time.
#include "model.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "../common/clock.hpp"
#include "activity.hpp"

namespace simgpu::drv {
namespace {

std::atomic<Model*> g_model{nullptr};
thread_local CUcontext t_current = nullptr;
std::atomic<unsigned long long> g_context_ids{0};

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
    d.primary = CUctx_st{static_cast<int>(i), true, ++g_context_ids};
    contexts_.insert(&d.primary);
  }
}

CUresult Model::init() {
  static const CUresult result = [] {
    const auto& node = process_node();
    if (!node) return CUDA_ERROR_NO_DEVICE;  // reported on stderr already
    if (node->init_error != 0) return static_cast<CUresult>(node->init_error);
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
  auto* ctx = new CUctx_st{dev, false, ++g_context_ids};
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
  int64_t t = std::max({d.legacy.tail, d.blocking_tail, d.host_tail});
  for (int64_t e : d.engine_free) t = std::max(t, e);
  return t;
}

int64_t Model::max_idle_time() const {
  int64_t t = 0;
  for (int dev = 0; dev < device_count(); ++dev) t = std::max(t, device_idle_time(dev));
  return t;
}

CUresult Model::ctx_synchronize(CUcontext ctx) {
  const int64_t start = now_ns();
  int64_t until = 0;
  int device = 0;
  {
    std::unique_lock lock(mu_);
    if (!ctx) ctx = t_current;
    if (!ctx || !contexts_.count(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
    if (CUresult r = check_unsafe_call()) return r;
    // Work behind a host function has no time yet: wait until it has one.
    const DeviceState& d = devices_[ctx->device];
    resolved_.wait(lock, [&] { return d.unresolved.empty(); });
    until = device_idle_time(ctx->device);
    device = ctx->device;
  }
  wait_until(until);
  HostWorker::instance().wait_bytes_through(until);
  synchronized();
  activity_sync(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, device, kNotApplicable, 0, start);
  return CUDA_SUCCESS;
}

// --- context settings -----------------------------------------------------------

CUresult Model::ctx_limit(CUlimit limit, size_t* value, bool set) {
  int dev = 0;
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = current_device(&dev)) return r;
  std::lock_guard lock(mu_);
  auto& limits = devices_[dev].limits;
  if (limit < 0 || static_cast<size_t>(limit) >= limits.size()) {
    // The CIG limits exist only on CIG contexts, which simgpu never makes.
    if (set || limit > CU_LIMIT_CIG_SHMEM_FALLBACK_ENABLED) return CUDA_ERROR_UNSUPPORTED_LIMIT;
    *value = 0;
    return CUDA_SUCCESS;
  }
  if (!set) {
    *value = limits[limit];
    return CUDA_SUCCESS;
  }
  if (limit == CU_LIMIT_MAX_L2_FETCH_GRANULARITY && *value > 128) return CUDA_ERROR_INVALID_VALUE;
  limits[limit] = *value;
  return CUDA_SUCCESS;
}

CUresult Model::ctx_cache_config(CUfunc_cache* config, bool set) {
  int dev = 0;
  if (!config || (set && (*config < CU_FUNC_CACHE_PREFER_NONE || *config > CU_FUNC_CACHE_PREFER_EQUAL)))
    return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = current_device(&dev)) return r;
  std::lock_guard lock(mu_);
  if (set) devices_[dev].cache_config = *config;
  else *config = devices_[dev].cache_config;
  return CUDA_SUCCESS;
}

CUresult Model::ctx_id(CUcontext ctx, unsigned long long* id) {
  if (!id) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(mu_);
  if (!ctx) ctx = t_current;
  if (!ctx || !contexts_.count(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  *id = ctx->id;
  return CUDA_SUCCESS;
}

}  // namespace simgpu::drv
