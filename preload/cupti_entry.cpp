// The CUPTI injection entry point the CUDA driver calls (CUDA_INJECTION64_PATH
// names libgpuscope.so); the work is cupti/injection.cpp's.
#include <cstdlib>

#include "environment.h"
#include "exported.h"
#include "injection.h"
#include "instance.h"

namespace gpuscope::preload {

// What this copy's instance marker points to (instance.h).
int initialize_injection() { return cupti::initialize_injection(std::getenv(protocol::env::kCuptiPath)); }

}  // namespace gpuscope::preload

// A copy that stands down (instance.h) hands the call to the primary, so
// CUDA_INJECTION64_PATH naming another copy still gets the primary CUPTI.
GPUSCOPE_EXPORT int InitializeInjection(void) {
  using namespace gpuscope::preload;
  if (const InstanceMarker* primary = primary_instance_marker()) return primary->initialize_injection();
  return is_primary_instance() ? initialize_injection() : 1;
}
