// NVML and the driver must not be called once the process has begun to
// exit. Libraries are finalized by _dl_fini in reverse load order, and
// libnvidia-ml.so.1 (loaded by the GPU sampler thread, after everything else) is
// finalized before libgpuscope.so, whose destructor stops the session: a
// sample taken in between reads NVML's freed state (seen as SIGSEGV in
// simgpu's nvmlGpmSampleGet at exit).
//
// So an atexit handler marks the process as exiting, after letting the GPU
// work in progress finish: the start-up probe first (for a short program it
// is the only evidence there is), then any NVML call. atexit handlers run
// before _dl_fini only when they were registered after it (it is registered
// by __libc_start_main, after every library constructor), so the handler is
// registered when the GPU source starts its work and once more a
// little later; it is idempotent. An exit waits for that work at most ~1 s.
#pragma once

#include <cstdint>

namespace gpuscope::gpu {

// The start-up probe begins / is done: registers the exit handler (once per
// process), which lets a probe in progress finish before the exit goes on.
void probe_started(uint64_t now_ns);
void probe_finished();

// Registers the handler once more at the first call at least 250 ms after
// the first registration (in case that one came before __libc_start_main's).
void rearm_exit_guard(uint64_t now_ns);

// Held around every stretch of NVML or driver calls. ok() is false once the
// process is exiting: then nothing may be called.
class GpuCallScope {
 public:
  GpuCallScope();
  ~GpuCallScope();
  GpuCallScope(const GpuCallScope&) = delete;
  GpuCallScope& operator=(const GpuCallScope&) = delete;
  bool ok() const { return ok_; }

 private:
  bool locked_ = false;
  bool ok_ = false;
};

}  // namespace gpuscope::gpu
