// The environment variables between `gpuscope` (analyzer/cli) and
// libgpuscope.so in the traced process (preload/): every GPUSCOPE_* name is
// spelled here and nowhere else in the product, so a rename changes both
// sides or neither (tests/protocol/check_contract.py fails on a GPUSCOPE_*
// string literal anywhere else). What each variable accepts: settings.h;
// what each does: docs/trace-format.md, "Settings".
#pragma once

#include <string>
#include <string_view>

namespace gpuscope::protocol::env {

inline constexpr char kPrefix[] = "GPUSCOPE_";

// Set by `gpuscope run` for each run (an inherited value is replaced).
inline constexpr char kOutput[] = "GPUSCOPE_OUTPUT";       // directory, file or name pattern (output_names.h)
inline constexpr char kRootPid[] = "GPUSCOPE_ROOT_PID";    // the process the CLI started
inline constexpr char kParentPid[] = "GPUSCOPE_PARENT_PID";  // nearest traced ancestor; each traced process
                                                             // passes its own pid down
inline constexpr char kRunId[] = "GPUSCOPE_RUN_ID";        // shared by the processes of one run
inline constexpr char kRunNotes[] = "GPUSCOPE_RUN_NOTES";  // file that hears why a process has no trace
inline constexpr const char* kPerRun[] = {kOutput, kRunId, kRootPid, kParentPid, kRunNotes};

// Read by the library; `gpuscope run`'s options set some of them.
inline constexpr char kDisable[] = "GPUSCOPE_DISABLE";
inline constexpr char kMode[] = "GPUSCOPE_MODE";
inline constexpr char kControlDir[] = "GPUSCOPE_CONTROL_DIR";
inline constexpr char kBufferKb[] = "GPUSCOPE_BUFFER_KB";
inline constexpr char kMaxThreads[] = "GPUSCOPE_MAX_THREADS";
inline constexpr char kFlushMs[] = "GPUSCOPE_FLUSH_MS";
inline constexpr char kCpuSampleMs[] = "GPUSCOPE_CPU_SAMPLE_MS";
inline constexpr char kZstdLevel[] = "GPUSCOPE_ZSTD_LEVEL";
inline constexpr char kExitTimeoutMs[] = "GPUSCOPE_EXIT_TIMEOUT_MS";
inline constexpr char kStacks[] = "GPUSCOPE_STACKS";
inline constexpr char kStackDepth[] = "GPUSCOPE_STACK_DEPTH";
inline constexpr char kPythonStacks[] = "GPUSCOPE_PYTHON_STACKS";  // Python frames in stacks, 0 = off
inline constexpr char kUnwinder[] = "GPUSCOPE_UNWINDER";
inline constexpr char kNvmlHz[] = "GPUSCOPE_NVML_HZ";
inline constexpr char kCpuSampling[] = "GPUSCOPE_CPU_SAMPLING";  // CPU stack samples per second, 0 = off
inline constexpr char kCpuSamplingDelayMs[] = "GPUSCOPE_CPU_SAMPLING_DELAY_MS";  // sampling starts this far in
inline constexpr char kClock[] = "GPUSCOPE_CLOCK";
inline constexpr char kDelayMs[] = "GPUSCOPE_DELAY_MS";        // capture windows (capture_range.h)
inline constexpr char kDurationMs[] = "GPUSCOPE_DURATION_MS";
inline constexpr char kCaptureRange[] = "GPUSCOPE_CAPTURE_RANGE";
inline constexpr char kCaptureRangeEnd[] = "GPUSCOPE_CAPTURE_RANGE_END";
inline constexpr char kCuptiPath[] = "GPUSCOPE_CUPTI_PATH";
inline constexpr char kCuptiCallbacks[] = "GPUSCOPE_CUPTI_CALLBACKS";  // device-work (default), all, none
inline constexpr char kCuptiKinds[] = "GPUSCOPE_CUPTI_KINDS";  // activity kinds beyond kernels; off = no CUPTI
inline constexpr char kDeviceSampling[] = "GPUSCOPE_DEVICE_SAMPLING";  // WINDOW_MS/PERIOD_MS (device_sampling.h)

// Values with a meaning of their own.
inline constexpr char kModeStandby[] = "standby";
inline constexpr char kUnwinderLibunwind[] = "libunwind";
inline constexpr char kClockMonotonic[] = "monotonic";

// Never read by the library, only known to it (not reported as typos).
inline constexpr char kLibrary[] = "GPUSCOPE_LIBRARY";  // the CLI: which libgpuscope.so to preload
inline constexpr char kProgress[] = "GPUSCOPE_PROGRESS";  // the CLI: progress bars (auto, always, never)
inline constexpr char kRunFollow[] = "GPUSCOPE_RUN_FOLLOW";  // the CLI: run reads its trace as it is written (on, off)
inline constexpr char kJobs[] = "GPUSCOPE_JOBS";        // scripts/: build parallelism
inline constexpr char kUpdateGolden[] = "GPUSCOPE_UPDATE_GOLDEN";  // tests: rewrite golden files
inline constexpr char kFlipCount[] = "GPUSCOPE_FLIP_COUNT";        // tests: bit flips per damage test
inline constexpr char kTestBrokenLibunwind[] = "GPUSCOPE_TEST_BROKEN_LIBUNWIND";  // tests: the fallback's child

// The environment entry "NAME=value".
inline std::string entry(std::string_view name, std::string_view value) {
  std::string out(name);
  out += '=';
  out += value;
  return out;
}

// True when the entry "NAME=value" sets `name`.
inline bool sets(std::string_view entry, std::string_view name) {
  return entry.size() > name.size() && entry.starts_with(name) && entry[name.size()] == '=';
}

}  // namespace gpuscope::protocol::env

namespace gpuscope::protocol {

// The symbol gpuscope's own programs export (the CLI: analyzer/cli/main.cpp)
// so that libgpuscope.so, preloaded into them by an inherited LD_PRELOAD,
// records nothing: `gpuscope run` under a service's environment that
// preloads the library would otherwise leave a trace of the CLI itself in
// the working directory.
inline constexpr char kToolMarkerSymbol[] = "gpuscope_tool";

}  // namespace gpuscope::protocol
