// CUPTI injection's work, for the library's entry point
// (preload/cupti_entry.cpp: InitializeInjection).
#pragma once

#include <string>

namespace gpuscope::cupti {

// What the library's environment says about device collection (read by
// preload/cupti_entry.cpp; cupti/ reads no environment of its own).
struct InjectionSettings {
  const char* cupti_path = nullptr;  // GPUSCOPE_CUPTI_PATH
  const char* callbacks = nullptr;   // GPUSCOPE_CUPTI_CALLBACKS (callback_scope.h)
  const char* kinds = nullptr;       // GPUSCOPE_CUPTI_KINDS
  // GPUSCOPE_DEVICE_SAMPLING, parsed (0: collect all the time), and its name.
  uint32_t sampling_window_ms = 0, sampling_period_ms = 0;
  std::string sampling_schedule;
  std::string off_reason;            // not empty: no device collection, and why
};

// Starts device activity collection in this process, once: loads libcupti
// (`cupti_path` first when not null, else next to the library and the
// usual places), subscribes and enables the activity kinds the settings
// select.
// Returns 1 whatever happens: a failure here must never fail the program's
// CUDA initialization; it is recorded in the trace instead.
int initialize_injection(const InjectionSettings& settings);

}  // namespace gpuscope::cupti
