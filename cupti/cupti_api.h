// The CUPTI functions the collector uses, as one table of pointers: filled
// from a dlopen'ed libcupti (never linked, so a process without a driver
// never loads it), or by tests with fakes.
#pragma once

#include <cupti.h>

#include <string>
#include <vector>

namespace gpuscope::cupti {

struct CuptiApi {
  decltype(&cuptiGetVersion) get_version = nullptr;
  decltype(&cuptiGetResultString) get_result_string = nullptr;
  decltype(&cuptiGetTimestamp) get_timestamp = nullptr;
  decltype(&cuptiActivityRegisterTimestampCallback) register_timestamp_callback = nullptr;
  decltype(&cuptiSetThreadIdType) set_thread_id_type = nullptr;
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&cuptiSubscribe_v2) subscribe = nullptr;
  decltype(&cuptiUnsubscribe) unsubscribe = nullptr;
  decltype(&cuptiEnableDomain) enable_domain = nullptr;
  decltype(&cuptiEnableCallback) enable_callback = nullptr;
  decltype(&cuptiGetCallbackName) get_callback_name = nullptr;
  decltype(&cuptiActivityEnable) enable = nullptr;
  decltype(&cuptiActivityDisable) disable = nullptr;
  decltype(&cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&cuptiActivityFlushPeriod) flush_period = nullptr;
  decltype(&cuptiActivityGetNextRecord) get_next_record = nullptr;
  decltype(&cuptiActivityGetNumDroppedRecords) get_num_dropped = nullptr;
};

using DlsymFn = void* (*)(void*, const char*);

// Where libcupti is looked for, in order: `env_path` (GPUSCOPE_CUPTI_PATH)
// when set, libcupti.so.13 next to libgpuscope.so (`own_dir`, the bundle's
// lib/), the CUDA toolkit's usual places, then the loader's own search.
std::vector<std::string> cupti_candidates(const char* env_path, const std::string& own_dir);

// dlopens the first candidate that loads and has every function of the
// table (looked up through `dlsym`, the real one: libgpuscope.so overrides
// dlsym). On success *path is the library loaded; on failure *error says
// what was tried.
bool load_cupti(const std::vector<std::string>& candidates, DlsymFn dlsym, CuptiApi* api, std::string* path,
                std::string* error);

// "CUPTI_ERROR_..." for a result, through the table when it can.
std::string result_name(const CuptiApi& api, CUptiResult r);

}  // namespace gpuscope::cupti
