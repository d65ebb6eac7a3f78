#include "collector.h"

#include <chrono>
#include <cstdlib>
#include <utility>

#include "activity_convert.h"
#include "clock.h"
#include "diag.h"
#include "recorder.h"

namespace gpuscope::cupti {
namespace {

using State = fb::DeviceCollectionState;

// The collector CUPTI's callbacks go to: CUPTI takes plain function
// pointers without user data for buffers and the timestamp.
std::atomic<Collector*> g_current{nullptr};

// What gpuscope converts, and what it only counts. Never KERNEL: it
// serializes kernel execution. CONCURRENT_KERNEL is the one kind without
// which device collection is pointless; the others are enabled when CUPTI
// allows and named in the status when it does not.
struct Kind {
  CUpti_ActivityKind kind;
  const char* name;
  bool required;
};
constexpr Kind kKinds[] = {
    {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "CONCURRENT_KERNEL", true},
    {CUPTI_ACTIVITY_KIND_MEMCPY, "MEMCPY", false},
    {CUPTI_ACTIVITY_KIND_MEMCPY2, "MEMCPY2", false},
    {CUPTI_ACTIVITY_KIND_MEMSET, "MEMSET", false},
    {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "SYNCHRONIZATION", false},
    {CUPTI_ACTIVITY_KIND_MEMORY2, "MEMORY2", false},
    {CUPTI_ACTIVITY_KIND_MEMORY_POOL, "MEMORY_POOL", false},
    {CUPTI_ACTIVITY_KIND_OVERHEAD, "OVERHEAD", false},
    {CUPTI_ACTIVITY_KIND_DEVICE, "DEVICE", false},
};
// Correlation: no RUNTIME/DRIVER activity kinds and no external correlation
// (which only works together with those kinds, i.e. a 40-byte record CUPTI
// timestamps and buffers for every CUDA call). Instead the API callback
// domains: at API entry CUPTI hands out the call's correlation id, and the
// hooked call enclosing it is the thread's outermost gpuscope call
// (ThreadContext::outer_correlation). Both domains, because a memcpy record
// carries the driver call's id and a kernel's may be the runtime call's.
constexpr CUpti_CallbackDomain kDomains[] = {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_CB_DOMAIN_DRIVER_API};

constexpr auto kFinishWait = std::chrono::milliseconds(2000);

uint64_t CUPTIAPI monotonic_timestamp() { return capture::monotonic_ns(); }

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = nullptr, *size = 0, *max_records = 0;
  if (Collector* c = g_current.load(std::memory_order_acquire)) c->on_buffer_requested(buffer, size, max_records);
}

void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream, uint8_t* buffer, size_t /*size*/, size_t valid) {
  if (Collector* c = g_current.load(std::memory_order_acquire)) c->on_buffer_completed(context, stream, buffer, valid);
  else std::free(buffer);
}

void CUPTIAPI api_callback(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId, const void* data) {
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  if (cb->callbackSite == CUPTI_API_ENTER) static_cast<Collector*>(userdata)->on_api_enter(cb->correlationId);
}

}  // namespace

Collector::Collector(CollectorOptions options) : options_(options) {}

Collector::~Collector() {
  Collector* self = this;
  g_current.compare_exchange_strong(self, nullptr);
}

bool Collector::start(const CuptiApi& api, const std::string& path) {
  if (started_.exchange(true)) return active();
  api_ = api;
  {
    std::lock_guard lock(mutex_);
    status_.cupti_path = path;
  }
  uint32_t version = 0;
  const CUptiResult r = api_.get_version(&version);
  if (r != CUPTI_SUCCESS) {
    fail(static_cast<uint8_t>(State::Failed), "cuptiGetVersion failed: " + result_name(api_, r));
    return false;
  }
  {
    std::lock_guard lock(mutex_);
    status_.cupti_version = version;
  }
  if (!layouts_compatible(version)) {
    fail(static_cast<uint8_t>(State::IncompatibleVersion),
         "incompatible CUPTI version " + std::to_string(version) + " (records read as " +
             std::to_string(kCompiledCuptiApiVersion) + ")");
    return false;
  }
  g_current.store(this, std::memory_order_release);
  if (!subscribe()) return false;
  if (!setup_clock_and_buffers()) {
    undo();
    return false;
  }
  // Callbacks before kinds (as in switch_on): a launch between the two
  // would leave a device record no call is known for. Without the
  // callbacks device records still come, only uncorrelated.
  const std::string no_correlation = enable_callbacks();
  if (!enable_kinds()) {
    undo();
    return false;
  }
  if (options_.flush_period_ms != 0) api_.flush_period(options_.flush_period_ms);
  {
    std::lock_guard lock(mutex_);
    status_.state = static_cast<uint8_t>(State::Active);
    if (!no_correlation.empty()) status_.reason += (status_.reason.empty() ? "" : "; ") + no_correlation;
  }
  started_ns_.store(capture::monotonic_ns(), std::memory_order_release);
  {
    // A hold taken before start() (no capture window open yet) applies now.
    std::lock_guard toggle(toggle_mutex_);
    active_.store(true, std::memory_order_release);
    if (held_ != 0) switch_off();
  }
  bump();
  return true;
}

// One subscriber per process: when Nsight, Kineto or the like holds CUPTI,
// gpuscope stays host-only and says who is in the way.
bool Collector::subscribe() {
  char holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 1] = {};
  CUpti_SubscriberParams params{};
  params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  params.subscriberName = "gpuscope";
  params.oldSubscriberName = holder;
  params.oldSubscriberSize = sizeof holder - 1;
  const CUptiResult r = api_.subscribe(&subscriber_, api_callback, this, &params);
  if (r == CUPTI_SUCCESS) return true;
  subscriber_ = nullptr;
  if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
    fail(static_cast<uint8_t>(State::SecondSubscriber),
         std::string("CUPTI already in use by ") + (holder[0] != '\0' ? holder : "another tool"));
  else
    fail(static_cast<uint8_t>(State::Failed), "cuptiSubscribe_v2 failed: " + result_name(api_, r));
  return false;
}

// Before any kind is enabled (CUPTI's rule): our clock, system thread ids,
// and the buffer callbacks.
bool Collector::setup_clock_and_buffers() {
  const bool own_clock = api_.register_timestamp_callback(monotonic_timestamp) == CUPTI_SUCCESS;
  {
    std::lock_guard lock(mutex_);
    status_.clock = static_cast<uint8_t>(own_clock ? fb::DeviceClock::TimestampCallback : fb::DeviceClock::Calibrated);
  }
  if (!own_clock) calibrate();
  api_.set_thread_id_type(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);  // gettid(), like our records; optional
  const CUptiResult r = api_.register_callbacks(buffer_requested, buffer_completed);
  if (r == CUPTI_SUCCESS) return true;
  fail(static_cast<uint8_t>(State::Failed), "cuptiActivityRegisterCallbacks failed: " + result_name(api_, r));
  return false;
}

bool Collector::enable_kinds() {
  std::string not_enabled;
  for (const Kind& k : kKinds) {
    if (!k.required && options_.kinds && !kind_selected(options_.kinds->c_str(), k.name)) continue;
    const CUptiResult r = api_.enable(k.kind);
    if (r == CUPTI_SUCCESS) {
      enabled_.push_back(k.kind);
      continue;
    }
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
      fail(static_cast<uint8_t>(State::SecondSubscriber), std::string("CUPTI already in use (enabling ") + k.name +
                                                              ": " + result_name(api_, r) + ")");
      return false;
    }
    if (k.required) {
      fail(static_cast<uint8_t>(State::Failed),
           std::string("cuptiActivityEnable(") + k.name + ") failed: " + result_name(api_, r));
      return false;
    }
    not_enabled += std::string(not_enabled.empty() ? "" : ", ") + k.name + " (" + result_name(api_, r) + ")";
  }
  if (!not_enabled.empty()) {
    std::lock_guard lock(mutex_);
    status_.reason = "not enabled: " + not_enabled;
  }
  return true;
}

// Returns why host calls will not be correlated, or "" when they will.
std::string Collector::enable_callbacks() {
  if (options_.callbacks == CallbackScope::None)
    return "no correlation with host calls: callbacks turned off (device records kept, not joined to calls)";
  std::string why;
  for (CUpti_CallbackDomain d : kDomains) {
    if (options_.callbacks == CallbackScope::DeviceWork && enable_device_work_callbacks(d) != 0) continue;
    // All, or a CUPTI that named none of its calls: the whole domain.
    if (const CUptiResult e = api_.enable_domain(1, subscriber_, d); e != CUPTI_SUCCESS)
      why = "no correlation with host calls: cuptiEnableDomain failed: " + result_name(api_, e);
    else whole_domains_.push_back(d);
  }
  return why;
}

// One callback per call that can queue, wait for or allocate device work;
// the names come from CUPTI itself, so a newer CUPTI's new launch or copy
// entry points are included. Returns how many were enabled.
uint32_t Collector::enable_device_work_callbacks(CUpti_CallbackDomain domain) {
  // Past the compiled table's end too: a newer libcupti may know more ids.
  const uint32_t known = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? static_cast<uint32_t>(CUPTI_RUNTIME_TRACE_CBID_SIZE)
                                                               : static_cast<uint32_t>(CUPTI_DRIVER_TRACE_CBID_SIZE);
  uint32_t enabled = 0;
  for (uint32_t cbid = 1; cbid < known + 256; ++cbid) {
    const char* name = nullptr;
    if (api_.get_callback_name(domain, cbid, &name) != CUPTI_SUCCESS || !is_device_work_call(domain, name)) continue;
    if (api_.enable_callback(1, subscriber_, domain, cbid) != CUPTI_SUCCESS) continue;
    callbacks_.push_back({domain, cbid});
    ++enabled;
  }
  return enabled;
}

bool Collector::hold(Hold why) {
  std::lock_guard toggle(toggle_mutex_);
  const auto bit = static_cast<uint8_t>(why);
  if ((held_ & bit) != 0 || finished_ns_.load(std::memory_order_acquire) != 0) return false;
  const bool was_on = switched_on();
  held_ |= bit;
  if (was_on) switch_off();
  return true;
}

bool Collector::release(Hold why) {
  std::lock_guard toggle(toggle_mutex_);
  const auto bit = static_cast<uint8_t>(why);
  if ((held_ & bit) == 0 || finished_ns_.load(std::memory_order_acquire) != 0) return false;
  held_ &= static_cast<uint8_t>(~bit);
  if (switched_on()) switch_on();  // the bit just cleared held it off
  return true;
}

bool Collector::collecting() const {
  std::lock_guard toggle(toggle_mutex_);
  return switched_on();
}

void Collector::flush() {
  std::lock_guard toggle(toggle_mutex_);
  if (active_.load(std::memory_order_acquire)) api_.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

// Both under toggle_mutex_, on an active collector.
void Collector::switch_off() {
  for (CUpti_ActivityKind k : enabled_) api_.disable(k);
  for (CUpti_CallbackDomain d : kDomains) api_.enable_domain(0, subscriber_, d);
}

// Callbacks first, kinds last: a call that enters between the two then
// has its correlation and no device record, never a device record with no
// call known for it (a window's first kernels came out uncorrelated when
// the toggling thread was preempted there; switch_off's order, kinds
// first, is the same rule backwards).
void Collector::switch_on() {
  for (CUpti_CallbackDomain d : whole_domains_) api_.enable_domain(1, subscriber_, d);
  for (const EnabledCallback& c : callbacks_) api_.enable_callback(1, subscriber_, c.domain, c.cbid);
  for (CUpti_ActivityKind k : enabled_) api_.enable(k);
}

// Back to how the program was before start(): nothing enabled, no
// subscriber, so another tool could still take CUPTI.
void Collector::undo() {
  for (CUpti_ActivityKind k : enabled_) api_.disable(k);
  enabled_.clear();
  if (subscriber_ != nullptr) api_.unsubscribe(subscriber_);
  subscriber_ = nullptr;
}

void Collector::fail(uint8_t state, std::string reason) {
  capture::diag_line("device activity (CUPTI) off: %s; host-side capture continues", reason.c_str());
  {
    std::lock_guard lock(mutex_);
    status_.state = state;
    status_.reason = std::move(reason);
  }
  bump();
}

void Collector::mark_unavailable(uint8_t state, std::string reason) {
  started_.store(true);
  {
    std::lock_guard lock(mutex_);
    status_.state = state;
    status_.reason = std::move(reason);
  }
  bump();
}

void Collector::finish() {
  {
    std::unique_lock lock(mutex_);
    if (finish_state_ == 2) return;
    if (finish_state_ == 1) {
      finished_cv_.wait_for(lock, kFinishWait, [this] { return finish_state_ == 2; });
      return;
    }
    finish_state_ = 1;
  }
  if (active_.load(std::memory_order_acquire)) {
    if (status().clock == static_cast<uint8_t>(fb::DeviceClock::Calibrated)) calibrate();
    std::lock_guard toggle(toggle_mutex_);
    finished_ns_.store(capture::monotonic_ns(), std::memory_order_release);
    // Forced: buffers still being filled are completed too (their records
    // are final); the completion callbacks run on this thread.
    api_.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    if (switched_on()) switch_off();
    active_.store(false, std::memory_order_release);
  }
  {
    std::lock_guard lock(mutex_);
    finish_state_ = 2;
  }
  finished_cv_.notify_all();
  bump();
}

std::vector<CompletedBuffer> Collector::take_completed() {
  std::vector<CompletedBuffer> out;
  {
    std::lock_guard lock(mutex_);
    out.swap(completed_);
  }
  outstanding_.fetch_sub(static_cast<uint32_t>(out.size()), std::memory_order_acq_rel);
  return out;
}

container::DeviceCollectionData Collector::status() const {
  std::lock_guard lock(mutex_);
  container::DeviceCollectionData s = status_;
  s.dropped = dropped_.load(std::memory_order_relaxed);
  s.buffers_refused = refused_.load(std::memory_order_relaxed);
  s.calibration_pairs = static_cast<uint32_t>(calibration_.size());
  return s;
}

LinearClock Collector::clock() {
  std::lock_guard lock(mutex_);
  if (status_.clock != static_cast<uint8_t>(fb::DeviceClock::Calibrated)) return {};  // identity
  return fit_clock(calibration_);
}

void Collector::calibrate() {
  uint64_t cupti_ns = 0;
  const uint64_t before = capture::monotonic_ns();
  if (api_.get_timestamp(&cupti_ns) != CUPTI_SUCCESS) return;
  const uint64_t after = capture::monotonic_ns();
  std::lock_guard lock(mutex_);
  // Bounded: a long run keeps the first pairs and a recent window.
  if (calibration_.size() >= 4096) calibration_.erase(calibration_.begin() + 1, calibration_.begin() + 2049);
  calibration_.push_back({cupti_ns, before + (after - before) / 2});
}

void Collector::on_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  if (outstanding_.fetch_add(1, std::memory_order_acq_rel) >= options_.max_buffers) {
    outstanding_.fetch_sub(1, std::memory_order_acq_rel);
    refused_.fetch_add(1, std::memory_order_relaxed);  // CUPTI drops (and counts) the records
    return;
  }
  void* p = std::aligned_alloc(8, (options_.buffer_bytes + 7) & ~size_t{7});
  if (p == nullptr) {
    outstanding_.fetch_sub(1, std::memory_order_acq_rel);
    refused_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  *buffer = static_cast<uint8_t*>(p);
  *size = options_.buffer_bytes;
  *max_records = 0;  // as many as fit
}

void Collector::on_buffer_completed(CUcontext context, uint32_t stream, uint8_t* buffer, size_t valid) {
  size_t dropped = 0;
  if (api_.get_num_dropped(context, stream, &dropped) == CUPTI_SUCCESS && dropped != 0)
    dropped_.fetch_add(dropped, std::memory_order_relaxed);
  if (buffer == nullptr) return;
  CompletedBuffer b;
  b.data.reset(buffer);
  b.valid = valid;
  std::lock_guard lock(mutex_);
  completed_.push_back(std::move(b));
}

void Collector::on_api_enter(uint32_t cupti_correlation) {
  const uint64_t ours = capture::thread_context().outer_correlation;
  if (ours != 0) correlations_.put(cupti_correlation, ours);
}

void Collector::select(const char* callbacks, const char* kinds) {
  if (started_.load()) return;  // CUPTI is set up once, as it was asked then
  // A value it does not know was named by the settings check at start-up
  // (protocol/settings.cpp).
  options_.callbacks = parse_callback_scope(callbacks).value_or(CallbackScope::DeviceWork);
  options_.kinds = kinds != nullptr ? std::optional<std::string>(kinds) : std::nullopt;
}

void Collector::set_sampling(uint64_t window_ns, uint64_t period_ns, std::string schedule) {
  if (started_.load()) return;
  options_.window_ns = window_ns;
  options_.period_ns = period_ns;
  options_.schedule = std::move(schedule);
}

Collector& process_collector() {
  static Collector* collector = new Collector();
  return *collector;
}

}  // namespace gpuscope::cupti
