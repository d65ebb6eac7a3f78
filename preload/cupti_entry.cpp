// The CUPTI injection entry point the CUDA driver calls (CUDA_INJECTION64_PATH
// names libgpuscope.so); the work is cupti/injection.cpp's.
#include <cstdlib>
#include <string>

#include "callback_scope.h"
#include "device_sampling.h"
#include "environment.h"
#include "exported.h"
#include "injection.h"
#include "instance.h"

namespace gpuscope::preload {

// What this copy's instance marker points to (instance.h).
int initialize_injection() {
  cupti::InjectionSettings settings;
  settings.cupti_path = std::getenv(protocol::env::kCuptiPath);
  settings.callbacks = std::getenv(protocol::env::kCuptiCallbacks);
  settings.kinds = std::getenv(protocol::env::kCuptiKinds);
  // A value the grammar does not take was named at start-up (settings
  // check) and collection stays continuous.
  if (const char* sampling = std::getenv(protocol::env::kDeviceSampling); sampling != nullptr) {
    if (const auto s = protocol::parse_device_sampling(sampling)) {
      settings.sampling_window_ms = s->window_ms;
      settings.sampling_period_ms = s->period_ms;
      settings.sampling_schedule = protocol::describe(*s);
    }
  }
  if (cupti::kinds_off(settings.kinds))
    settings.off_reason = std::string("turned off (") + protocol::env::kCuptiKinds + "=off): host-side capture only";
  return cupti::initialize_injection(settings);
}

}  // namespace gpuscope::preload

// A copy that stands down (instance.h) hands the call to the primary, so
// CUDA_INJECTION64_PATH naming another copy still gets the primary CUPTI.
GPUSCOPE_EXPORT int InitializeInjection(void) {
  using namespace gpuscope::preload;
  if (const InstanceMarker* primary = primary_instance_marker()) return primary->initialize_injection();
  return is_primary_instance() ? initialize_injection() : 1;
}
