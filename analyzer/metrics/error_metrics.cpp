// CUDA errors in the metrics: every failing outermost call by what it says
// about the GPU (error_meaning), whether any work reached the GPU, what
// showed CUDA worked, and the error a process that exited non-zero stopped
// at. The names come from the CUDA headers (cuda_error_names.inc).
#include <algorithm>
#include <array>
#include <limits>

#include <fmt/format.h>

#include "metrics.h"

namespace gpuscope::analyzer {
namespace {

struct ErrorName {
  int code;
  const char* runtime;
  const char* driver;
};
constexpr ErrorName kErrors[] = {
#include "cuda_error_names.inc"
};

// "No usable GPU here": not initialized, stub library, driver too old,
// devices unavailable, no device, driver/runtime mismatch, no compat support.
constexpr int kNoGpuCodes[] = {3, 34, 35, 46, 100, 803, 804};
// Not a driver question but still no GPU for this program: the fabric
// manager not ready, no MPS server, and the unknown error a half-set-up
// container gives at the first call.
constexpr int kNoGpuHereCodes[] = {802, 805, 999};
// A GPU with no code for it: invalid device function, invalid image, no
// kernel image for this architecture, invalid or too-new PTX, no JIT.
constexpr int kWrongBuildCodes[] = {98, 200, 209, 218, 221, 222, 223};
// Answers about state that programs check for and carry on after: the
// profiler already started or stopped, peer access already enabled or not
// enabled, host memory already registered or not registered. Like "not
// ready", answers rather than failures: no evidence of a fallback, never
// what a process died of.
constexpr int kStateAnswerCodes[] = {5, 6, 7, 8, 704, 705, 712, 713};
// Codes only a working device raises: out of memory, a launch over the
// device's limits, and the faults of kernels that ran (700-721).
bool raised_by_a_device(int code) { return code == 2 || code == 9 || (code >= 700 && code <= 721); }

template <size_t N>
bool among(const int (&codes)[N], int code) {
  return std::find(std::begin(codes), std::end(codes), code) != std::end(codes);
}

const ErrorName* find_error(int code) {
  const auto* it = std::lower_bound(std::begin(kErrors), std::end(kErrors), code,
                                    [](const ErrorName& e, int c) { return e.code < c; });
  return it != std::end(kErrors) && it->code == code ? it : nullptr;
}

bool is_driver_function(const std::string& name) { return name.starts_with("cu") && !name.starts_with("cuda"); }

// A call that succeeds only where CUDA found a device: a count of them
// (cudaGetDeviceCount answers cudaErrorNoDevice for none), the driver's
// initialization, or a context's first call.
std::optional<std::string> found_a_device(const TraceModel& m) {
  for (const char* name : {"cudaGetDeviceCount", "cuDeviceGetCount", "cuInit", "cudaSetDevice", "cudaFree"}) {
    const auto calls = m.host_by_function.find(name);
    if (calls == m.host_by_function.end()) continue;
    uint64_t failed = 0;
    for (auto it = m.summary.nonzero_results.lower_bound({name, std::numeric_limits<int>::min()});
         it != m.summary.nonzero_results.end() && it->first.first == name; ++it)
      failed += it->second;
    if (calls->second.count > failed) return fmt::format("{} succeeded", name);
  }
  return std::nullopt;
}

}  // namespace

// Every failing outermost call is evidence; the work calls that succeeded
// say whether the GPU did anything at all.
void call_outcome_metrics(const TraceModel& m, Metrics& x) {
  std::array<uint64_t, kCallKinds> failed{};
  for (const auto& [key, n] : m.summary.nonzero_results) {
    CudaError err{key.first, key.second, cuda_error_name(key.second, is_driver_function(key.first)), n};
    failed[static_cast<size_t>(classify_function(key.first))] += n;
    if (is_no_gpu_error(key.second)) x.no_gpu_errors.push_back(err);
    if (!is_answer_not_failure(key.second)) {
      x.failures.push_back(err);
      const ErrorMeaning meaning = error_meaning(key.first, key.second);
      if (meaning == ErrorMeaning::WrongBuild) x.wrong_build_errors.push_back(err);
      if (meaning == ErrorMeaning::ProgramError) x.program_errors.push_back(err);
      if (meaning == ErrorMeaning::ProgramError && raised_by_a_device(key.second) && !x.cuda_answered)
        x.cuda_answered = fmt::format("{} is raised by a device that exists", err.name);
    }
    x.errors.push_back(std::move(err));
  }
  if (const auto found = found_a_device(m)) x.cuda_answered = found;
  const auto succeeded = [&](CallKind k) {
    const uint64_t calls = m.host_by_kind[static_cast<size_t>(k)].count, bad = failed[static_cast<size_t>(k)];
    return calls > bad ? calls - bad : 0;
  };
  x.successful_launches = x.launches > failed[static_cast<size_t>(CallKind::Launch)]
                              ? x.launches - failed[static_cast<size_t>(CallKind::Launch)]
                              : 0;
  x.successful_copies = succeeded(CallKind::Copy);
  x.successful_memsets = succeeded(CallKind::Memset);
  x.successful_allocs = succeeded(CallKind::Alloc);
  // Device records are work the GPU did, whatever API queued it (a HIP
  // trace's kernels, graph kernels).
  x.gpu_work_done = x.successful_launches + x.successful_copies + x.successful_memsets + x.successful_allocs > 0 ||
                    m.device_records > 0;
}

// A process that did GPU work, then got a CUDA error and no work succeeded
// after it, and exited non-zero, most likely died of that error (a kernel's
// fault makes every later call fail; an allocation too large ends a run).
// Errors of a runtime already unloading at exit (4) and answers about state
// are no cause: when one is the last failure, nothing is claimed.
namespace {
CudaError error_of(const TraceModel& m, const TraceModel::Failure& f) {
  const std::string function = m.summary.name_of(f.function_id);
  return CudaError{function, f.result, cuda_error_name(f.result, is_driver_function(function)), 1};
}
}  // namespace

void stopped_on_error_metrics(const TraceModel& m, Metrics& x) {
  constexpr int kCudartUnloading = 4;
  if (m.first_failure) x.first_error = error_of(m, *m.first_failure);
  if (!m.last_failure || !x.gpu_work_done || !x.exit_status || *x.exit_status == 0) return;
  const TraceModel::Failure& f = *m.last_failure;
  if (f.start_ns < m.last_work_ns || f.result == kCudartUnloading || is_answer_not_failure(f.result)) return;
  x.stopped_on_error = error_of(m, f);
}

std::string cuda_error_name(int code, bool driver) {
  const ErrorName* e = find_error(code);
  if (e == nullptr) return "";
  // A code only one API defines is still named (cudaErrorInsufficientDriver from a runtime wrapper).
  return driver ? (*e->driver != '\0' ? e->driver : e->runtime) : (*e->runtime != '\0' ? e->runtime : e->driver);
}

bool is_no_gpu_error(int code) { return among(kNoGpuCodes, code); }

// Initialization calls (cudaGetDeviceCount, cudaSetDevice, cuInit) fail
// only when there is no GPU for the program, whatever the code says
// (801 from cudaGetDeviceCount on a node that cannot initialize CUDA).
ErrorMeaning error_meaning(const std::string& function, int code) {
  if (among(kNoGpuCodes, code) || among(kNoGpuHereCodes, code)) return ErrorMeaning::NoGpu;
  if (among(kWrongBuildCodes, code)) return ErrorMeaning::WrongBuild;
  if (classify_function(function) == CallKind::Init) return ErrorMeaning::NoGpu;
  return ErrorMeaning::ProgramError;
}

bool is_answer_not_failure(int code) { return code == kNotReady || among(kStateAnswerCodes, code); }

}  // namespace gpuscope::analyzer
