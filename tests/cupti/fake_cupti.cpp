#include "fake_cupti.h"

#include <algorithm>
#include <cstring>

#include "clock.h"

namespace gpuscope::cupti::test {
namespace {

FakeCupti g_fake;

CUptiResult get_version(uint32_t* v) {
  *v = g_fake.version;
  return CUPTI_SUCCESS;
}
CUptiResult get_timestamp(uint64_t* t) {
  *t = capture::monotonic_ns() + g_fake.timestamp_offset_ns;
  return CUPTI_SUCCESS;
}
CUptiResult register_timestamp(CUpti_TimestampCallbackFunc f) {
  if (g_fake.timestamp_callback_result == CUPTI_SUCCESS) g_fake.timestamp_callback = f;
  return g_fake.timestamp_callback_result;
}
CUptiResult set_thread_id_type(CUpti_ActivityThreadIdType) { return CUPTI_SUCCESS; }
CUptiResult register_callbacks(CUpti_BuffersCallbackRequestFunc r, CUpti_BuffersCallbackCompleteFunc c) {
  g_fake.request = r, g_fake.complete = c;
  return CUPTI_SUCCESS;
}
CUptiResult subscribe(CUpti_SubscriberHandle* h, CUpti_CallbackFunc f, void* userdata, CUpti_SubscriberParams* p) {
  if (g_fake.subscribe_result != CUPTI_SUCCESS) {
    if (p != nullptr && p->oldSubscriberName != nullptr && p->oldSubscriberSize > g_fake.holder.size())
      std::strcpy(p->oldSubscriberName, g_fake.holder.c_str());
    return g_fake.subscribe_result;
  }
  *h = reinterpret_cast<CUpti_SubscriberHandle>(&g_fake);
  g_fake.callback = f, g_fake.callback_userdata = userdata, g_fake.subscribed = true;
  return CUPTI_SUCCESS;
}
CUptiResult unsubscribe(CUpti_SubscriberHandle) {
  g_fake.unsubscribed = true;
  return CUPTI_SUCCESS;
}
CUptiResult enable_domain(uint32_t enable, CUpti_SubscriberHandle, CUpti_CallbackDomain d) {
  if (enable != 0) g_fake.domains.push_back(d);
  else std::erase(g_fake.domains, d);
  if (enable == 0) std::erase_if(g_fake.callbacks, [&](const FakeCupti::Callback& c) { return c.domain == d; });
  return CUPTI_SUCCESS;
}
// Whole-domain switches turn the domain's single callbacks off too, as CUPTI's do.
CUptiResult enable_callback(uint32_t enable, CUpti_SubscriberHandle, CUpti_CallbackDomain d, CUpti_CallbackId id) {
  if (enable != 0) g_fake.callbacks.push_back({d, id});
  else std::erase_if(g_fake.callbacks, [&](const FakeCupti::Callback& c) { return c.domain == d && c.cbid == id; });
  return CUPTI_SUCCESS;
}
// CUPTI's own table of names (it needs no driver).
CUptiResult callback_name(CUpti_CallbackDomain d, uint32_t id, const char** name) {
  if (g_fake.callback_names_fail) return CUPTI_ERROR_NOT_SUPPORTED;
  return cuptiGetCallbackName(d, id, name);
}
CUptiResult enable(CUpti_ActivityKind k) {
  if (k == g_fake.refuse_kind) return g_fake.refuse_result;
  g_fake.enabled.push_back(k);
  return CUPTI_SUCCESS;
}
CUptiResult disable(CUpti_ActivityKind k) {
  std::erase(g_fake.enabled, k);
  return CUPTI_SUCCESS;
}
CUptiResult flush_all(uint32_t flags) {
  g_fake.flushes.push_back(flags);
  if ((flags & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) != 0) g_fake.complete_all();
  return CUPTI_SUCCESS;
}
CUptiResult flush_period(uint32_t) { return CUPTI_SUCCESS; }
CUptiResult get_num_dropped(CUcontext, uint32_t, size_t* n) {
  *n = g_fake.dropped_per_completion;
  return CUPTI_SUCCESS;
}
CUptiResult result_string(CUptiResult r, const char** s) { return cuptiGetResultString(r, s); }

}  // namespace

bool FakeCupti::hand_out(const std::vector<uint8_t>& records) {
  uint8_t* buffer = nullptr;
  size_t size = 0, max_records = 0;
  request(&buffer, &size, &max_records);
  if (buffer == nullptr) return false;
  const size_t n = std::min(size, records.size());
  if (n != 0) std::memcpy(buffer, records.data(), n);
  pending.push_back({buffer, size, n});
  return true;
}

void FakeCupti::complete_all() {
  std::vector<Pending> now;
  now.swap(pending);
  for (const Pending& p : now) complete(nullptr, 0, p.data, p.size, p.valid);
}

void FakeCupti::api_enter(CUpti_CallbackDomain domain, uint32_t correlation_id) {
  CUpti_CallbackData data{};
  data.callbackSite = CUPTI_API_ENTER;
  data.correlationId = correlation_id;
  callback(callback_userdata, domain, 0, &data);
  data.callbackSite = CUPTI_API_EXIT;
  callback(callback_userdata, domain, 0, &data);
}

FakeCupti& fake() { return g_fake; }

bool FakeCupti::has_callback(CUpti_CallbackDomain domain, uint32_t cbid) const {
  return std::any_of(callbacks.begin(), callbacks.end(),
                     [&](const Callback& c) { return c.domain == domain && c.cbid == cbid; });
}

CuptiApi make_fake_api() {
  g_fake = FakeCupti{};
  CuptiApi a;
  a.get_version = get_version;
  a.get_result_string = result_string;
  a.get_timestamp = get_timestamp;
  a.register_timestamp_callback = register_timestamp;
  a.set_thread_id_type = set_thread_id_type;
  a.register_callbacks = register_callbacks;
  a.subscribe = subscribe;
  a.unsubscribe = unsubscribe;
  a.enable_domain = enable_domain;
  a.enable_callback = enable_callback;
  a.get_callback_name = callback_name;
  a.enable = enable;
  a.disable = disable;
  a.flush_all = flush_all;
  a.flush_period = flush_period;
  a.get_next_record = cuptiActivityGetNextRecord;  // the real walker
  a.get_num_dropped = get_num_dropped;
  return a;
}

}  // namespace gpuscope::cupti::test
