// CUDA that did not work: nothing reached the GPU and a CUDA call failed.
// Either no GPU was usable for the program (no driver, no device, devices
// hidden, no code for this GPU): CUDA unavailable, silent when the program
// carried on and loud when it failed. Or CUDA worked and refused what the
// program asked of it (more memory than the GPU has, a launch over the
// device's limits, a bad argument): calling that "CUDA unavailable" sent
// the user to fix a driver that was fine.
#include <algorithm>
#include <optional>
#include <set>

#include "rules_internal.h"

namespace gpuscope::analyzer {
namespace {

// "cudaMalloc returned cudaErrorMemoryAllocation (2)"
std::string returned(const CudaError& e) {
  return fmt::format("{} returned {} ({})", e.function, e.name.empty() ? "an unnamed error" : e.name, e.code);
}

std::string error_line(const CudaError& e) { return fmt::format("{}, {} time(s)", returned(e), e.count); }

// What says CUDA did not work here, one line each: every failing outermost
// call (name, code, error name), failed GPU library loads, hidden devices,
// and the driver and device nodes as the environment probe found them.
std::vector<std::string> fallback_evidence(const Metrics& x) {
  std::vector<std::string> ev;
  for (const auto& e : x.failures) ev.push_back(error_line(e));
  for (const auto& l : x.failed_loads) ev.push_back("failed to load " + l);
  if (x.devices_hidden) ev.push_back(fmt::format("CUDA_VISIBLE_DEVICES='{}' hides every GPU", *x.visible_devices));
  if (x.driver_problem) ev.push_back("driver: " + *x.driver_problem);
  for (const auto& n : x.missing_nodes) ev.push_back("device node " + n);
  return ev;
}

std::string fallback_fix(const Metrics& x, bool program_failed) {
  std::vector<std::string> fixes;
  if (x.devices_hidden) fixes.push_back("set CUDA_VISIBLE_DEVICES to the GPUs this process should use");
  if (x.driver_problem || !x.failed_loads.empty() || !x.no_gpu_errors.empty())
    fixes.push_back("make the NVIDIA driver visible to the process (container: run with the NVIDIA container "
                    "runtime / --gpus; host: install a driver new enough for this CUDA runtime)");
  if (!x.wrong_build_errors.empty())
    fixes.push_back("build the kernels for this GPU's architecture (nvcc -gencode arch=compute_XY,code=sm_XY for "
                    "its compute capability, and PTX for newer GPUs), or install a driver new enough for the PTX "
                    "the program carries");
  if (!x.missing_nodes.empty()) fixes.push_back("grant the process access to /dev/nvidia*");
  if (fixes.empty()) fixes.push_back("look up the failing calls' error codes above: the first one is the cause");
  if (!program_failed)
    fixes.push_back("make the service fail at start when no GPU is usable instead of falling back silently "
                    "(check cudaGetDeviceCount's result), and do not scale out CPU-fallback replicas");
  return fmt::format("{}.", fmt::join(fixes, "; "));
}

// Positive evidence that GPU work was attempted or expected and did not
// happen: a failing CUDA call, a GPU library that failed to load, or
// devices hidden from a process that touched CUDA. A missing /dev/nvidia*
// node or driver alone is not: the program may never have wanted a GPU.
bool cuda_failed(const Metrics& x) {
  return !x.failures.empty() || !x.failed_loads.empty() || (x.devices_hidden && x.cuda_attempted);
}

// Whether anything says there was no GPU for this program: an error that
// means so, a GPU library that did not load, or every device hidden.
bool cuda_unusable(const Metrics& x) {
  return x.failures.size() > x.program_errors.size() || !x.failed_loads.empty() ||
         (x.devices_hidden && x.cuda_attempted);
}

// A failure that explains the whole run (share 100 %).
Finding whole_run_failure(std::string id, Bottleneck cls, std::string title) {
  Finding f;
  f.id = std::move(id);
  f.cls = cls;
  f.severity = Status::Fail;
  f.share = 1.0;
  f.title = std::move(title);
  return f;
}

// The program failed loudly, or carried on without the GPU (fell back).
Finding failed_or_fell_back(bool program_failed, std::string failed_id, Bottleneck failed_cls,
                            std::string failed_title, std::string fallback_title) {
  if (program_failed) return whole_run_failure(std::move(failed_id), failed_cls, std::move(failed_title));
  return whole_run_failure("fallback.cpu_fallback", Bottleneck::CpuFallback, std::move(fallback_title));
}

std::string nothing_reached_the_gpu(const Metrics& x) {
  return fmt::format("0 kernels launched, 0 copies, memsets or allocations made; {}", cpu_evidence(x));
}

// " and exited 0", or that the trace does not say how it ended.
std::string fallback_exit(const Metrics& x) {
  return x.exit_status ? " and exited 0" : " (its exit is not in the trace)";
}

Finding unavailable_finding(const Metrics& x, bool program_failed) {
  Finding f = failed_or_fell_back(
      program_failed, "fallback.cuda_unavailable_program_failed", Bottleneck::CudaUnavailable,
      program_failed ? fmt::format("CUDA unavailable; the program failed (exit status {})", *x.exit_status) : "",
      "CUDA unavailable; the program carried on on the CPU" + fallback_exit(x));
  f.evidence = fallback_evidence(x);
  f.evidence.push_back(nothing_reached_the_gpu(x));
  f.fix = fallback_fix(x, program_failed);
  return f;
}

// The error the finding is about: the first failing call where the trace
// says which came first (later errors often follow from it: a fault
// repeats in every later call), else the most frequent one.
const CudaError& main_error(const Metrics& x) {
  for (const CudaError& e : x.program_errors)
    if (x.first_error && e.function == x.first_error->function && e.code == x.first_error->code) return e;
  return *std::max_element(x.program_errors.begin(), x.program_errors.end(),
                           [](const CudaError& a, const CudaError& b) { return a.count < b.count; });
}

// What to do about an error a working CUDA returned.
std::string program_error_fix(int code) {
  if (code == kOutOfMemory) return kOutOfMemoryFix;
  if (code == 9 || code == 701 || code == 720)
    return "a launch asked for more than the device allows: at most 1024 threads per block, dynamic shared memory "
           "within the device's limit (above 48 KiB only after cudaFuncSetAttribute with "
           "cudaFuncAttributeMaxDynamicSharedMemorySize), registers per thread times threads per block within an "
           "SM's (__launch_bounds__, --maxrregcount); cudaOccupancyMaxPotentialBlockSize picks a block size that fits";
  if (code >= 700 && code <= 721)
    return "a kernel faulted, and every later call in the context fails with it: run the program under "
           "compute-sanitizer to find the faulting access (CUDA_LAUNCH_BLOCKING=1 reports it at its launch)";
  if (code == 801)
    return "this GPU or driver does not support the operation: check the device's attributes "
           "(cudaDeviceGetAttribute) before using the feature, and keep a path without it";
  return "CUDA rejected the call's arguments or the state it was made in: check them at the call sites below "
         "(compute-sanitizer and CUDA_LAUNCH_BLOCKING=1 name the failing call)";
}

// Where the failing functions failed: each call site with its failed calls.
std::vector<CallSite> failing_sites(const TraceModel& m, const std::vector<CudaError>& errors) {
  std::set<std::string> failing;
  for (const CudaError& e : errors) failing.insert(e.function);
  std::vector<CallSite> out;
  for (const auto& [key, site] : m.sites)
    if (site.failed != 0 && failing.contains(m.summary.name_of(key.function_id)))
      out.push_back(CallSite{m.summary.name_of(key.function_id), key.stack_id, site.failed,
                             static_cast<uint64_t>(static_cast<double>(site.calls.ns) * site.failed /
                                                   std::max<uint64_t>(site.calls.count, 1))});
  std::sort(out.begin(), out.end(), [](const CallSite& a, const CallSite& b) { return a.count > b.count; });
  if (out.size() > 3) out.resize(3);
  return out;
}

// What to do about an error by what it means (error_meaning): the fix for
// a request CUDA refused, or for a GPU that stopped working mid-run.
std::string stopped_error_fix(const CudaError& e) {
  switch (error_meaning(e.function, e.code)) {
    case ErrorMeaning::NoGpu:
      return "the GPU became unusable during the run (it fell off the bus, was reset, or its driver failed): look "
             "for Xid errors in the kernel log (dmesg) and run `gpuscope doctor` on the node";
    case ErrorMeaning::WrongBuild:
      return "a kernel has no code for this GPU (a module built without its architecture): build every module "
             "with -gencode for its compute capability, and PTX for newer GPUs";
    case ErrorMeaning::ProgramError: break;
  }
  return program_error_fix(e.code);
}

// CUDA answered and said no: the fix is in the program, not the driver.
Finding program_error_finding(const TraceModel& m, const Metrics& x, bool program_failed) {
  const CudaError& e = main_error(x);
  const std::string error = returned(e);
  Finding f = failed_or_fell_back(
      program_failed, "cuda.program_failed_on_error", Bottleneck::CudaError,
      program_failed ? fmt::format("failed on a CUDA error (exit status {}): {}", *x.exit_status, error) : "",
      error + ", and the program carried on without the GPU" + fallback_exit(x));
  for (const CudaError& each : x.program_errors) f.evidence.push_back(error_line(each));
  f.evidence.push_back(x.cuda_answered ? "CUDA found the GPU: " + *x.cuda_answered
                                       : std::string("no error says the GPU is missing (no driver, no device, no "
                                                     "device visible, no GPU library that failed to load)"));
  f.evidence.push_back(nothing_reached_the_gpu(x));
  f.fix = program_error_fix(e.code) + ".";
  if (!program_failed)
    f.fix += " Make the service fail at start when its GPU path does not work instead of carrying on silently.";
  f.sites = failing_sites(m, x.program_errors);
  return f;
}

}  // namespace

// A process that did GPU work, stopped at a CUDA error and exited non-zero:
// what it died of matters more than how it used the GPU before.
std::optional<Finding> stopped_on_error_finding(const TraceModel& m, const Metrics& x) {
  if (!x.stopped_on_error) return std::nullopt;
  const CudaError& e = *x.stopped_on_error;
  const std::string error = returned(e);
  Finding f = whole_run_failure(
      "cuda.program_failed_on_error", Bottleneck::CudaError,
      fmt::format("failed on a CUDA error: the program exited with status {} after {}", *x.exit_status, error));
  f.evidence.push_back(fmt::format("{} was the last CUDA call to fail, and no launch, copy, memset or allocation "
                                   "succeeded after it",
                                   error));
  f.evidence.push_back(fmt::format("before it: {} launches, {} copies, {} memsets and {} allocations succeeded",
                                   x.successful_launches, x.successful_copies, x.successful_memsets,
                                   x.successful_allocs));
  for (const CudaError& each : x.failures) f.evidence.push_back("in the whole run: " + error_line(each));
  if (e.code == kOutOfMemory)
    f.evidence.push_back(fmt::format("live device memory of this process: peak {}, {} at the end",
                                     mib(x.live_peak_bytes), mib(x.live_end_bytes)));
  f.fix = stopped_error_fix(e) + ".";
  f.sites = failing_sites(m, {e});
  return f;
}

std::optional<Finding> fallback_finding(const TraceModel& m, const Metrics& x) {
  if (x.gpu_work_done || !cuda_failed(x)) return std::nullopt;
  // Capture windows without a CUDA call in them say nothing about CUDA:
  // the program may use the GPU outside them. Only an error is evidence.
  const bool windowed = !m.capture_windows.empty() || !m.capture_trigger.empty();
  if (windowed && m.host_by_function.empty() && x.failures.empty()) return std::nullopt;
  // Loud or silent: a program that exits non-zero told its user; one that
  // exits 0 (or keeps running) carried on without the GPU.
  const bool program_failed = x.exit_status && *x.exit_status != 0;
  if (!cuda_unusable(x)) return program_error_finding(m, x, program_failed);
  return unavailable_finding(x, program_failed);
}

}  // namespace gpuscope::analyzer
