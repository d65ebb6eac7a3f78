// CUPTI injection's work, for the library's entry point
// (preload/cupti_entry.cpp: InitializeInjection).
#pragma once

namespace gpuscope::cupti {

// Starts device activity collection in this process, once: loads libcupti
// (`cupti_path` first when not null: GPUSCOPE_CUPTI_PATH, else next to the
// library and the usual places), subscribes and enables the activity kinds.
// Returns 1 whatever happens: a failure here must never fail the program's
// CUDA initialization; it is recorded in the trace instead.
int initialize_injection(const char* cupti_path);

}  // namespace gpuscope::cupti
