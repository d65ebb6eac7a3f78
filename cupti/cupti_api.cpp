#include "cupti_api.h"

#include <dlfcn.h>

#include <cstdlib>

namespace gpuscope::cupti {
namespace {

constexpr const char* kSoname = "libcupti.so.13";

// Every entry of the table; a library missing one is not used (an older or
// damaged CUPTI would fail half-way through setup otherwise).
template <class Fn> bool resolve(void* handle, DlsymFn dlsym, const char* name, Fn* out, std::string* missing) {
  *out = reinterpret_cast<Fn>(dlsym(handle, name));
  if (*out == nullptr && missing->empty()) *missing = name;
  return *out != nullptr;
}

bool resolve_all(void* h, DlsymFn s, CuptiApi* a, std::string* missing) {
  bool ok = true;
  ok &= resolve(h, s, "cuptiGetVersion", &a->get_version, missing);
  ok &= resolve(h, s, "cuptiGetResultString", &a->get_result_string, missing);
  ok &= resolve(h, s, "cuptiGetTimestamp", &a->get_timestamp, missing);
  ok &= resolve(h, s, "cuptiActivityRegisterTimestampCallback", &a->register_timestamp_callback, missing);
  ok &= resolve(h, s, "cuptiSetThreadIdType", &a->set_thread_id_type, missing);
  ok &= resolve(h, s, "cuptiActivityRegisterCallbacks", &a->register_callbacks, missing);
  ok &= resolve(h, s, "cuptiSubscribe_v2", &a->subscribe, missing);
  ok &= resolve(h, s, "cuptiUnsubscribe", &a->unsubscribe, missing);
  ok &= resolve(h, s, "cuptiEnableDomain", &a->enable_domain, missing);
  ok &= resolve(h, s, "cuptiEnableCallback", &a->enable_callback, missing);
  ok &= resolve(h, s, "cuptiGetCallbackName", &a->get_callback_name, missing);
  ok &= resolve(h, s, "cuptiActivityEnable", &a->enable, missing);
  ok &= resolve(h, s, "cuptiActivityDisable", &a->disable, missing);
  ok &= resolve(h, s, "cuptiActivityFlushAll", &a->flush_all, missing);
  ok &= resolve(h, s, "cuptiActivityFlushPeriod", &a->flush_period, missing);
  ok &= resolve(h, s, "cuptiActivityGetNextRecord", &a->get_next_record, missing);
  ok &= resolve(h, s, "cuptiActivityGetNumDroppedRecords", &a->get_num_dropped, missing);
  return ok;
}

}  // namespace

std::vector<std::string> cupti_candidates(const char* env_path, const std::string& own_dir) {
  std::vector<std::string> out;
  if (env_path != nullptr && *env_path != '\0') out.emplace_back(env_path);
  if (!own_dir.empty()) out.push_back(own_dir + "/" + kSoname);
  for (const char* dir : {"/usr/local/cuda/extras/CUPTI/lib64", "/usr/local/cuda/lib64", "/usr/local/cuda/lib"})
    out.push_back(std::string(dir) + "/" + kSoname);
  out.emplace_back(kSoname);  // LD_LIBRARY_PATH, the cache, RUNPATHs
  return out;
}

bool load_cupti(const std::vector<std::string>& candidates, DlsymFn dlsym, CuptiApi* api, std::string* path,
                std::string* error) {
  std::string tried;
  for (const auto& candidate : candidates) {
    // RTLD_LOCAL: CUPTI's symbols stay out of the program's scope.
    void* handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      tried += (tried.empty() ? "" : ", ") + candidate;
      continue;
    }
    std::string missing;
    CuptiApi table;
    if (!resolve_all(handle, dlsym, &table, &missing)) {
      tried += (tried.empty() ? "" : ", ") + candidate + " (no " + missing + ")";
      dlclose(handle);
      continue;
    }
    *api = table;  // the handle stays open for good: CUPTI runs until exit
    *path = candidate;
    return true;
  }
  *error = "libcupti not found at " + tried;
  return false;
}

std::string result_name(const CuptiApi& api, CUptiResult r) {
  const char* text = nullptr;
  if (api.get_result_string != nullptr && api.get_result_string(r, &text) == CUPTI_SUCCESS && text != nullptr)
    return text;
  return "CUPTI error " + std::to_string(static_cast<int>(r));
}

}  // namespace gpuscope::cupti
