// The CUPTI injection entry point. `gpuscope run` sets CUDA_INJECTION64_PATH
// to this library; the CUDA driver dlopens it at CUDA initialization (the
// same instance when it is LD_PRELOADed too) and calls InitializeInjection on
// the initializing thread, before any context exists. Without a driver that
// never happens, so libcupti is never loaded and device collection is
// recorded as "no driver".
#include <atomic>
#include <cstdlib>

#include "collector.h"
#include "cupti_api.h"
#include "diag.h"
#include "environment.h"
#include "instance.h"
#include "real_symbol.h"
#include "recorder.h"
#include "session.h"

#define GPUSCOPE_EXPORT extern "C" __attribute__((visibility("default")))

namespace gpuscope::preload {
namespace {

std::atomic<bool> g_injected{false};

// atexit, registered after the CUDA runtime's own handlers (it initialized
// CUDA before calling us), so it runs before they tear CUDA down: the
// forced flush must see a live driver. _exit and exec skip it; there the
// writer's end of capture flushes (TraceSource::end) instead.
void finish_at_exit() { cupti::process_collector().finish(); }

}  // namespace

// Returns 1 whatever happens: a failure here must never fail the program's
// CUDA initialization.
int initialize_injection() {
  if (g_injected.exchange(true)) return 1;
  capture::InternalScope internal;  // CUPTI's own loads and calls are not the program's
  if (capture::current_phase() == capture::Phase::Idle) capture::initialize_capture_early();
  if (capture::current_phase() != capture::Phase::Recording) return 1;  // opted out, fork child, ended
  cupti::Collector& collector = cupti::process_collector();
  cupti::CuptiApi api;
  std::string path, error;
  const auto candidates = cupti::cupti_candidates(std::getenv(protocol::env::kCuptiPath), cupti::own_directory());
  if (!cupti::load_cupti(candidates, preload::real_dlsym(), &api, &path, &error)) {
    capture::diag_line("device activity (CUPTI) off: %s; host-side capture continues", error.c_str());
    collector.mark_unavailable(static_cast<uint8_t>(fb::DeviceCollectionState::LibraryMissing), error);
    return 1;
  }
  if (collector.start(api, path)) std::atexit(finish_at_exit);
  return 1;
}

}  // namespace gpuscope::preload

// A copy that stands down (instance.h) hands the call to the primary, so
// CUDA_INJECTION64_PATH naming another copy still gets the primary CUPTI.
GPUSCOPE_EXPORT int InitializeInjection(void) {
  using namespace gpuscope::preload;
  if (const InstanceMarker* primary = primary_instance_marker()) return primary->initialize_injection();
  return is_primary_instance() ? initialize_injection() : 1;
}
