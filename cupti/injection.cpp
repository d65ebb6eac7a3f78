// CUPTI injection: what InitializeInjection (preload/cupti_entry.cpp, the
// exported entry point) does in the copy of libgpuscope.so that traces.
// `gpuscope run` sets CUDA_INJECTION64_PATH to the library; the CUDA driver
// dlopens it at CUDA initialization (the same instance when it is
// LD_PRELOADed too) and calls InitializeInjection on the initializing
// thread, before any context exists. Without a driver that never happens,
// so libcupti is never loaded and device collection is recorded as "no
// driver".
#include <atomic>
#include <cstdlib>

#include "injection.h"

#include "collector.h"
#include "cupti_api.h"
#include "diag.h"
#include "process_info.h"
#include "real_symbol.h"
#include "recorder.h"
#include "session.h"

namespace gpuscope::cupti {
namespace {

std::atomic<bool> g_injected{false};

// atexit, registered after the CUDA runtime's own handlers (it initialized
// CUDA before calling us), so it runs before they tear CUDA down: the
// forced flush must see a live driver. _exit and exec skip it; there the
// writer's end of capture flushes (TraceSource::end) instead.
void finish_at_exit() { process_collector().finish(); }

}  // namespace

int initialize_injection(const InjectionSettings& settings) {
  if (g_injected.exchange(true)) return 1;
  capture::InternalScope internal;  // CUPTI's own loads and calls are not the program's
  if (capture::current_phase() == capture::Phase::Idle) capture::initialize_capture_early();
  // Paused counts: CUDA's start often comes before the first capture window
  // opens or before the first attach, and CUPTI can only be set up now.
  if (!capture::capture_may_record()) return 1;  // opted out, fork child, ended
  Collector& collector = process_collector();
  if (!settings.off_reason.empty()) {
    collector.mark_unavailable(static_cast<uint8_t>(fb::DeviceCollectionState::Failed), settings.off_reason);
    return 1;
  }
  collector.select(settings.callbacks, settings.kinds);
  if (settings.sampling_window_ms != 0)
    collector.set_sampling(settings.sampling_window_ms * 1'000'000ull, settings.sampling_period_ms * 1'000'000ull,
                           settings.sampling_schedule);
  CuptiApi api;
  std::string path, error;
  const auto candidates = cupti_candidates(settings.cupti_path, capture::own_directory());
  if (!load_cupti(candidates, capture::real_dlsym(), &api, &path, &error)) {
    capture::diag_line("device activity (CUPTI) off: %s; host-side capture continues", error.c_str());
    collector.mark_unavailable(static_cast<uint8_t>(fb::DeviceCollectionState::LibraryMissing), error);
    return 1;
  }
  if (collector.start(api, path)) std::atexit(finish_at_exit);
  return 1;
}

}  // namespace gpuscope::cupti
