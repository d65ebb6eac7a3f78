#include "callback_scope.h"

#include <strings.h>

#include <cstring>
#include <string_view>

namespace gpuscope::cupti {
namespace {

// Prefixes of the API functions that queue device work, wait for it or
// allocate device memory: the ones whose correlation ids can appear in
// KERNEL, MEMCPY, MEMSET, SYNCHRONIZATION and MEMORY2 records.
constexpr const char* kRuntimeWork[] = {
    "cudaLaunch",         "cudaGraphLaunch",       "cudaMemcpy",          "cudaMemset",
    "cudaMalloc",         "cudaFree",              "cudaHostAlloc",       "cudaDeviceSynchronize",
    "cudaThreadSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cudaStreamWaitEvent",
    "cudaMemPrefetch",
};
constexpr const char* kDriverWork[] = {
    "cuLaunch",           "cuGraphLaunch",         "cuMemcpy",            "cuMemset",
    "cuMemAlloc",         "cuMemFree",             "cuMemHostAlloc",      "cuCtxSynchronize",
    "cuStreamSynchronize", "cuEventSynchronize",   "cuStreamWaitEvent",   "cuMemPrefetch",
};

template <size_t N> bool starts_with_any(std::string_view name, const char* const (&prefixes)[N]) {
  for (const char* p : prefixes)
    if (name.starts_with(p)) return true;
  return false;
}

bool same_word(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace

std::optional<CallbackScope> parse_callback_scope(const char* value) {
  if (value == nullptr || *value == '\0' || std::strcmp(value, "device-work") == 0) return CallbackScope::DeviceWork;
  if (std::strcmp(value, "all") == 0) return CallbackScope::All;
  if (std::strcmp(value, "none") == 0) return CallbackScope::None;
  return std::nullopt;
}

const char* callback_scope_name(CallbackScope s) {
  switch (s) {
    case CallbackScope::All: return "all";
    case CallbackScope::None: return "none";
    case CallbackScope::DeviceWork: break;
  }
  return "device-work";
}

bool is_device_work_call(CUpti_CallbackDomain domain, const char* name) {
  if (name == nullptr) return false;
  const std::string_view n(name);
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) return starts_with_any(n, kRuntimeWork);
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API) return starts_with_any(n, kDriverWork);
  return false;
}

bool kinds_off(const char* list) { return list != nullptr && same_word(list, "off"); }

bool kind_selected(const char* list, const char* kind_name) {
  if (list == nullptr) return true;
  std::string_view rest(list);
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    if (same_word(rest.substr(0, comma), kind_name)) return true;
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return false;
}

}  // namespace gpuscope::cupti
