// Capture settings, read once from the environment at start-up.
//
// Variables (named in protocol/environment.h, what each accepts in
// protocol/settings.h, docs/trace-format.md describes them):
//   GPUSCOPE_OUTPUT          directory, file, or pattern with %p %h %n %t %r %%
//                            (protocol/output_names.h)
//   GPUSCOPE_ROOT_PID        pid of the process `gpuscope run` started; other
//                            processes of the run derive their own file name
//   GPUSCOPE_PARENT_PID      pid of the nearest traced ancestor (recorded, then
//                            replaced by our own pid for our children)
//   GPUSCOPE_RUN_ID          shared by the processes of one `gpuscope run` (recorded)
//   GPUSCOPE_RUN_NOTES       file of `gpuscope run` that hears why a process
//                            has no trace (diag.h, note_for_run)
//   GPUSCOPE_DISABLE=1       load inert (1/yes/true/on; 0/no/false/off)
//   GPUSCOPE_MODE=standby    load idle; trace only while `gpuscope attach`
//                            asks (preload/control/standby.h)
//   GPUSCOPE_CONTROL_DIR     where the control sockets are (control_paths.h)
//   GPUSCOPE_BUFFER_KB       ring buffer per thread (default 1024)
//   GPUSCOPE_MAX_THREADS     thread buffers (default 256)
//   GPUSCOPE_FLUSH_MS        longest time between two frames (default 100)
//   GPUSCOPE_CPU_SAMPLE_MS   CPU-time sampling period, 0 = off (default 10)
//   GPUSCOPE_ZSTD_LEVEL      compression level (default -5, zstd's fast mode)
//   GPUSCOPE_EXIT_TIMEOUT_MS longest wait for the final flush at exit (default 3000)
//   GPUSCOPE_STACKS=0        no call stacks on hooked calls (default on; any
//                            boolean spelling, as for GPUSCOPE_DISABLE)
//   GPUSCOPE_STACK_DEPTH     frames per stack (default 32, at most 64)
//   GPUSCOPE_PYTHON_STACKS=0 native frames only in a Python program's stacks
//                            (default on: the CPython frames too, python_frames.h)
//   GPUSCOPE_UNWINDER=libunwind  every stack through libunwind (default: the
//                            cached unwind-table walker, libunwind as fallback)
//   GPUSCOPE_NVML_HZ         NVML samples per second, 0 = off (default 20)
//   GPUSCOPE_CPU_SAMPLING    CPU stack samples per second of a thread's CPU
//                            time, 0 = off (default 250; host_sampler.h)
//   GPUSCOPE_CPU_SAMPLING_DELAY_MS  CPU sampling starts this far into the
//                            capture (default 50; 0 = at its start)
//   GPUSCOPE_CLOCK=monotonic hot-path timestamps from clock_gettime, not the TSC
//   GPUSCOPE_DELAY_MS, GPUSCOPE_DURATION_MS, GPUSCOPE_CAPTURE_RANGE,
//   GPUSCOPE_CAPTURE_RANGE_END   capture windows (capture_window.h)
//   GPUSCOPE_CUPTI_PATH      the libcupti to load at injection
// One table (protocol/settings.h) lists them with what each accepts: a value that
// cannot be used, and a GPUSCOPE_* name that is none of them (a typo), each
// get one line in CaptureConfig::problems, which the library prints.
// Under secure execution (setuid, file capabilities) none of them is read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpuscope::capture {

struct SessionOptions {
  uint32_t ring_kb = 1024;
  uint32_t max_threads = 256;
  uint32_t drain_interval_ms = 10;
  uint32_t flush_interval_ms = 100;
  uint32_t cpu_sample_interval_ms = 10;
  int zstd_level = -5;  // zstd's fast mode: docs/performance.md
  uint32_t exit_timeout_ms = 3000;
  bool start_paused = false;  // capture windows decide when recording starts (capture_window.h)
};

struct CaptureConfig {
  bool disabled = false;
  bool secure_execution = false;
  std::string mode;    // GPUSCOPE_MODE: "" or "standby"
  std::string output;  // GPUSCOPE_OUTPUT as given
  std::string run_notes;  // GPUSCOPE_RUN_NOTES
  int root_pid = 0;
  SessionOptions options;
  bool stacks = true;
  uint32_t stack_depth = 32;
  bool fast_unwinder = true;
  bool python_stacks = true;
  uint32_t nvml_hz = 20;
  // 250, not 1000: a sample costs the sampled thread ~10 us in a VM (the
  // timer interrupt and the user call chain), 1.4 % of a launch-bound run
  // at 1 kHz against 0.6 % (docs/performance.md).
  uint32_t cpu_sampling_hz = 250;
  uint32_t cpu_sampling_delay_ms = 50;
  // One sentence per GPUSCOPE_* variable that was set but cannot be used
  // (naming it, its value, what is accepted and what is used instead), and
  // per unknown GPUSCOPE_* name.
  std::vector<std::string> problems;
};

// Reads the GPUSCOPE_* variables (none under AT_SECURE).
CaptureConfig read_capture_config();

}  // namespace gpuscope::capture
