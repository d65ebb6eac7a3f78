// From findings to the report's skeleton: the five checks in diagnosis
// order, the verdict with its confidence, and what the trace could not see.
#include <algorithm>
#include <cstdlib>
#include <set>
#include <sstream>
#include <string_view>

#include "rules_internal.h"

namespace gpuscope::analyzer {
namespace {

Status worst(const std::vector<Finding>& findings, std::initializer_list<const char*> id_prefixes) {
  Status s = Status::Pass;
  for (const Finding& f : findings)
    for (const char* p : id_prefixes)
      if (f.id.starts_with(p)) {
        if (f.severity == Status::Fail) return Status::Fail;
        s = Status::Warn;
      }
  return s;
}

std::set<int> parse_cpu_list(const std::string& text) {
  std::set<int> cpus;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    int a = -1, b = -1;
    if (std::sscanf(part.c_str(), "%d-%d", &a, &b) == 2) {
      for (int c = a; c <= b && c - a < 4096; ++c) cpus.insert(c);
    } else if (a >= 0) {
      cpus.insert(a);
    }
  }
  return cpus;
}

const char* gpu_busy_source_text(const Metrics& x) {
  if (x.gpu_busy_source == "device") return "device timestamps";
  if (x.gpu_busy_source == "nvml") return "NVML";
  return "inferred from the host: synchronizations that waited on queued work";
}

// Other processes on the same GPU by the driver's samples, when they held
// enough of it to matter; empty otherwise.
std::string other_processes_text(const Metrics& x) {
  if (!x.other_processes_share || *x.other_processes_share < kOtherProcessesShare) return "";
  std::string text = fmt::format("other processes held {} of this GPU's busy time (the driver's per-process "
                                 "samples), most of it {}",
                                 pct(*x.other_processes_share), x.busiest_other_process);
  if (x.nvml_gpu_util_all)
    text += fmt::format(": NVML's {} busy is the whole GPU's, this process's part is about {}",
                        pct(*x.nvml_gpu_util_all), pct(*x.gpu_util));
  else if (x.gpu_busy_source == "device")
    text += ": this process's kernels and copies are timed by the device, but may have waited behind theirs";
  return text;
}

Check host_check(const Metrics& x, const std::vector<Finding>& f) {
  Check c{1, "queueing and host: is the GPU idle while the host is busy?", worst(f, {"cpu."}), {}};
  c.lines.push_back(fmt::format("feeding thread (tid {}) outside CUDA: {} of wall time", x.feeder_tid,
                                pct(x.feeder_outside_cuda_share)));
  if (x.process_cpu_cores) c.lines.push_back(fmt::format("process CPU: {:.2f} cores on average", *x.process_cpu_cores));
  c.lines.push_back(x.gpu_util ? fmt::format("GPU busy: {} ({})", pct(*x.gpu_util), gpu_busy_source_text(x))
                               : fmt::format("GPU busy: unknown ({} NVML sample(s), at least {} needed; no device "
                                             "timestamps; no synchronization waited on queued work)",
                                             x.gpu_samples, kMinGpuSamples));
  if (const std::string others = other_processes_text(x); !others.empty()) c.lines.push_back(others);
  return c;
}

Check useful_work_check(const Metrics& x, const std::vector<Finding>& f) {
  Check c{2, "useful GPU work: copies vs kernels, bandwidth, utilization vs throughput",
          worst(f, {"pcie.host", "sync.", "memory.dram", "memory.device_copies", "gpu.clocks"}), {}};
  c.lines.push_back(fmt::format("feeding thread blocked: copies {}, synchronization {}, launches {}",
                                pct(kind_share(x, CallKind::Copy)), pct(kind_share(x, CallKind::Sync)),
                                pct(kind_share(x, CallKind::Launch))));
  c.lines.push_back(fmt::format("{} kernels, {} host-to-device, {} device-to-host, {} device-to-device and {} peer "
                                "copies",
                                x.kernels, x.h2d_count, x.d2h_count, x.d2d_count, x.peer_count));
  if (x.pageable_share) c.lines.push_back(fmt::format("pageable share of copied bytes: {}", pct(*x.pageable_share)));
  if (x.achieved_gbps && x.link_gbps)
    c.lines.push_back(fmt::format("achieved copy bandwidth {:.2f} GB/s of the link's {:.1f} GB/s", *x.achieved_gbps,
                                  *x.link_gbps));
  if (x.sm_util && x.dram_util)
    c.lines.push_back(fmt::format("SM utilization {}, DRAM bandwidth utilization {} (NVML GPM)", pct(*x.sm_util),
                                  pct(*x.dram_util)));
  for (const ClockSlowdown& slow : x.clock_slowdowns)
    c.lines.push_back(fmt::format("GPU {} clocks held down: {} in {} of {} NVML samples", slow.device,
                                  slow.reason->name, slow.samples, slow.of_samples));
  return c;
}

Check memory_check(const Metrics& x, const std::vector<Finding>& f) {
  Check c{3, "memory: allocation churn, growth, out-of-memory", worst(f, {"memory.alloc"}), {}};
  c.lines.push_back(fmt::format("{} allocations and {} frees ({:.0f}/s), {} of the feeding thread's time", x.allocs,
                                x.frees, x.alloc_rate_per_s, pct(x.alloc_free_share)));
  c.lines.push_back(fmt::format("live device memory: peak {}, {} at the end", mib(x.live_peak_bytes),
                                mib(x.live_end_bytes)));
  if (x.oom_errors) c.lines.push_back(fmt::format("{} out-of-memory errors", x.oom_errors));
  return c;
}

Check topology_check(const TraceModel& m, const Metrics& x, const std::vector<Finding>& f) {
  Check c{4, "topology and data movement: PCIe link, NUMA placement", worst(f, {"topology."}), {}};
  if (x.link_gbps)
    c.lines.push_back(fmt::format("PCIe link {} (maximum {})", x.link_text, x.link_max_text));
  else
    c.lines.push_back("PCIe link: unknown (no NVML device description)");
  if (!m.summary.devices.empty() && m.summary.process && !m.summary.devices.front().local_cpus.empty()) {
    const std::set<int> local = parse_cpu_list(m.summary.devices.front().local_cpus);
    size_t outside = 0;
    for (int cpu : m.summary.process->cpu_affinity) outside += local.count(cpu) == 0;
    c.lines.push_back(fmt::format("GPU-local CPUs {}; the process may run on {} CPU(s) outside them",
                                  m.summary.devices.front().local_cpus, outside));
    if (outside > 0 && c.status == Status::Pass) c.status = Status::Warn;
  }
  if (x.link_gbps == std::nullopt && c.status == Status::Pass) c.status = Status::Unknown;
  return c;
}

Check environment_check(const Metrics& x, const std::vector<Finding>& f) {
  Check c{5, "software and environment: versions, init errors, libraries, devices", worst(f, {"fallback."}), {}};
  c.lines.push_back("driver: " + (x.driver_version.empty() ? std::string("unknown") : x.driver_version));
  if (x.driver_problem) c.lines.push_back("driver problem: " + *x.driver_problem);
  for (const auto& lib : x.loaded_gpu_libraries)
    if (lib.find("libcudart") != std::string::npos) c.lines.push_back("CUDA runtime: " + lib);
  c.lines.push_back(x.device_collection ? "CUPTI: " + *x.device_collection
                                         : "CUPTI: not used by this capture (host-side hooks and NVML only)");
  for (const auto& e : x.errors)
    c.lines.push_back(fmt::format("{} returned {}{} ({}x)", e.function, e.code, e.name.empty() ? "" : " " + e.name,
                                  e.count));
  for (const auto& l : x.failed_loads) c.lines.push_back("failed load: " + l);
  if (x.visible_devices) c.lines.push_back(fmt::format("CUDA_VISIBLE_DEVICES='{}'", *x.visible_devices));
  if (x.successful_launches == 0 && x.successful_copies == 0)
    for (const auto& n : x.missing_nodes) c.lines.push_back("device node " + n);
  if (c.status == Status::Pass && (!x.errors.empty() || !x.failed_loads.empty())) c.status = Status::Warn;
  return c;
}

// An imported trace: where it came from, and what its source could not see.
void import_coverage(const TraceModel& m, std::vector<std::string>& out) {
  const auto& im = m.summary.import_source;
  if (!im) return;
  out.push_back(fmt::format("source: imported from {} ({}): {} events, {} of kinds without a gpuscope record, {} host "
                            "calls without their device record, {} with unusable timestamps{}",
                            im->path, im->producer.empty() ? im->format : im->producer, im->events, im->skipped,
                            im->unjoined, im->out_of_range, im->complete ? "" : "; cut short: " + im->damage));
  for (const auto& note : im->notes) out.push_back("not in the source: " + note);
}

// The CUDA runtimes the process loaded. gpuscope's runtime hooks are
// exported once per runtime symbol version (preload/hooks/runtime_versions.h:
// 10.x to 14), each with its own real function, so two runtimes in one
// process are both traced, each call reaching its own runtime; a runtime of
// another version is called around the hooks (docs/interception.md, "Two
// CUDA runtimes in one process").
void runtime_coverage(const Metrics& x, std::vector<std::string>& out) {
  constexpr int kFirstHookedMajor = 10, kLastHookedMajor = 14;
  std::set<std::string> runtimes, unhooked;
  for (const auto& lib : x.loaded_gpu_libraries) {
    const size_t at = lib.rfind("libcudart.so.");
    if (at == std::string::npos) continue;
    const size_t major = at + std::string_view("libcudart.so.").size();
    const std::string soname = lib.substr(at, std::min(lib.find('.', major), lib.size()) - at);  // libcudart.so.12
    runtimes.insert(soname);
    const int number = std::atoi(soname.c_str() + std::string_view("libcudart.so.").size());
    if (number < kFirstHookedMajor || number > kLastHookedMajor) unhooked.insert(soname);
  }
  if (runtimes.size() >= 2)
    out.push_back(fmt::format("CUDA runtimes: {} loaded ({}): each traced through hooks of its own symbol version, "
                              "its calls passed to it",
                              runtimes.size(), fmt::join(runtimes, ", ")));
  if (!unhooked.empty())
    out.push_back(fmt::format("CUDA runtime calls: not seen through {}, a version gpuscope has no hooks for; the "
                              "driver calls under them were",
                              fmt::join(unhooked, ", ")));
}

std::vector<std::string> coverage_lines(const TraceModel& m, const Metrics& x) {
  std::vector<std::string> out;
  import_coverage(m, out);
  runtime_coverage(x, out);
  if (x.device_collection)
    out.push_back("device activity: " + *x.device_collection);
  else  // a trace from before format 1.1
    out.push_back(x.device_timestamps ? "device activity: CUPTI device timestamps"
                                      : "device activity: host-side only (no CUPTI device records: kernel and copy "
                                        "times are the host calls' times, GPU busy comes from NVML)");
  out.push_back(x.driver_level_seen ? fmt::format("driver-level calls: seen ({} calls)", m.driver_calls)
                                    : "driver-level calls: none seen");
  std::string nvml = m.summary.probe ? m.summary.probe->nvml_status : "not recorded";
  out.push_back(x.gpu_samples ? fmt::format("NVML metrics: {} samples", x.gpu_samples)
                              : fmt::format("NVML metrics: none ({})", nvml.empty() ? "no samples" : nvml));
  const uint64_t events = m.summary.counts.total();
  out.push_back(x.dropped == 0 ? "dropped events: none"
                               : fmt::format("dropped events: {} ({:.2f}% of those recorded): figures undercount",
                                             x.dropped, 100.0 * x.dropped / std::max<uint64_t>(1, events)));
  if (m.device_memory.untracked)
    out.push_back(fmt::format("live memory: {} allocations beyond the {} followed are not in the curve",
                              m.device_memory.untracked, kMaxTrackedAllocations));
  if (x.truncated) out.push_back("trace: truncated or without an end record: the end of the run is missing");
  if (m.capture_windows.empty() && !m.capture_trigger.empty())
    out.push_back(fmt::format("capture windows: none opened (waiting for {}): nothing of the program was recorded",
                              m.capture_trigger));
  if (!m.device_windows.empty())
    out.push_back(fmt::format("device activity: sampled ({}), {} window(s), {:.3f} s of the {:.3f} s traced: the "
                              "figures and the verdict cover only them; host calls outside them are in the trace",
                              m.device_schedule, m.device_windows.size(), spans_length(m.device_windows) / 1e9,
                              (m.end_ns > m.begin_ns ? m.end_ns - m.begin_ns : 0) / 1e9));
  if (!m.capture_windows.empty()) {
    const uint64_t captured = spans_length(m.capture_windows);
    out.push_back(fmt::format("capture windows: {} ({:.3f} s): nothing outside them was recorded, and the figures "
                              "cover only them",
                              m.capture_windows.size(), captured / 1e9));
  }
  if (x.corrupt_frames) out.push_back(fmt::format("trace: {} corrupt frame(s) skipped", x.corrupt_frames));
  if (!x.truncated && !x.corrupt_frames) out.push_back("trace: complete");
  return out;
}

// The capture waited for a window that never opened: no finding can be
// about the program, whatever the idle process looked like meanwhile.
void nothing_captured(const TraceModel& m, Analysis* a) {
  a->findings.clear();
  a->verdict = Verdict{};
  a->verdict.confidence = "high";
  a->verdict.confidence_reason = "no capture window in the trace";
  a->verdict.headline = fmt::format("nothing captured: no capture window opened (waiting for {})", m.capture_trigger);
}

// "3 CUDA calls made (cudaGetDeviceCount x1, cudaGetDeviceProperties x2)",
// the most frequent first; "a GPU library loaded, no CUDA call made".
std::string calls_text(const TraceModel& m) {
  std::vector<std::pair<uint64_t, std::string>> calls;
  uint64_t total = 0;
  for (const auto& [name, tc] : m.host_by_function) {
    calls.emplace_back(tc.count, name);
    total += tc.count;
  }
  if (total == 0) return "a GPU library loaded, no CUDA call made";
  std::stable_sort(calls.begin(), calls.end(), [](const auto& l, const auto& r) { return l.first > r.first; });
  std::vector<std::string> names;
  for (size_t i = 0; i < std::min<size_t>(3, calls.size()); ++i)
    names.push_back(fmt::format("{} x{}", calls[i].second, calls[i].first));
  return fmt::format("{} CUDA call(s) made ({}{})", total, fmt::join(names, ", "), calls.size() > 3 ? ", ..." : "");
}

// What the trace saw, for the verdicts that are not a class of bottleneck;
// kernels and copies include what CUDA graph launches ran.
std::string seen_text(const Metrics& x) {
  return fmt::format("{} kernel(s), {} copies, {} synchronization(s), {} allocation(s)", x.kernels,
                     x.h2d_count + x.d2h_count + x.d2d_count + x.peer_count + x.graph_copies, x.syncs, x.allocs);
}

// Nothing ran on a GPU and nothing says it should have: no verdict class,
// no findings (a busy CPU in `ls` or a shell is not a GPU problem).
void no_cuda_work(const TraceModel& m, const Metrics& x, Analysis* a) {
  a->findings.clear();
  a->verdict = Verdict{};
  a->verdict.cls = Bottleneck::NoCudaWork;
  a->verdict.confidence = "high";
  a->verdict.confidence_reason = "no kernel, copy, memset or allocation in the trace, and no failing CUDA call";
  if (!x.cuda_attempted)
    a->verdict.headline = "no CUDA work: no GPU library loaded and no CUDA call made";
  else
    a->verdict.headline = fmt::format("no CUDA work: {}, none of which launched a kernel or copied, set or allocated "
                                      "memory",
                                      calls_text(m));
}

uint64_t work_calls(const Metrics& x) {
  return x.launches + x.h2d_count + x.d2h_count + x.d2d_count + x.peer_count + x.syncs + x.successful_memsets;
}

// Enough time after initialization, and enough operations in it, for a
// share of wall time to mean more than fixed costs and scheduling noise.
bool enough_evidence(const Metrics& x) { return x.judged_s >= kMinJudgedSeconds && work_calls(x) >= kMinWorkCalls; }

// Below the floor a share of wall time is fixed costs and noise: the answer
// is what was seen, with the leading finding as a hint, not a class.
void too_short(const TraceModel& m, const Metrics& x, Analysis* a) {
  const Verdict judged = a->verdict;
  a->verdict = Verdict{};
  a->verdict.cls = Bottleneck::TooShort;
  a->verdict.confidence = "high";
  a->verdict.confidence_reason =
      fmt::format("{:.3f} s judged after {:.3f} s of initialization and {} GPU operations; a verdict needs at least "
                  "{:.1f} s and {} operations",
                  x.judged_s, x.init_s, work_calls(x), kMinJudgedSeconds, kMinWorkCalls);
  std::string hint;
  if (judged.cls != Bottleneck::Inconclusive)
    hint = fmt::format("; it looked {} ({}), which this little time cannot confirm", bottleneck_label(judged.cls),
                       pct(judged.share));
  a->verdict.headline = fmt::format("too short to judge: {:.3f} s traced, {:.3f} s of it initialization; seen {}{}",
                                    x.wall_s, x.init_s, seen_text(x), hint);
  // A finding's share of so little time is as unconfirmed as the verdict's:
  // it stays, as a hint, never as a failure with a fix to act on.
  for (Finding& f : a->findings) {
    if (f.severity != Status::Fail) continue;
    f.severity = Status::Warn;
    f.evidence.push_back(fmt::format("unconfirmed: {:.3f} s judged after initialization, under the {:.1f} s a "
                                     "verdict needs",
                                     x.judged_s, kMinJudgedSeconds));
  }
  // Sampled device tracing judges only its windows: a short run, or one
  // with narrow windows, has too few of them whatever its length.
  if (!m.device_windows.empty())
    a->verdict.confidence_reason +=
        fmt::format("; device activity was sampled ({}), and its {} window(s) are all that is judged: run longer, "
                    "or widen the windows (--device-activity sampled:WINDOW_MS/PERIOD_MS)",
                    m.device_schedule, m.device_windows.size());
}

Verdict make_verdict(const Metrics& x, const std::vector<Finding>& findings) {
  Verdict v;
  auto top = std::find_if(findings.begin(), findings.end(), [](const Finding& f) { return f.severity == Status::Fail; });
  if (top != findings.end()) {
    v.cls = top->cls;
    v.share = top->share;
  } else if (x.gpu_util && *x.gpu_util >= kGpuBusy) {
    v.cls = Bottleneck::Healthy;
    v.share = *x.gpu_util;
  }
  const bool direct = is_cuda_failure(v.cls) && !x.failures.empty();
  int level = x.device_timestamps || direct ? 2 : x.gpu_samples ? 1 : 0;
  std::vector<std::string> why;
  if (!x.device_timestamps) why.push_back("host-side timing only");
  if (!x.gpu_samples) why.push_back("no NVML metrics");
  const uint64_t events = std::max<uint64_t>(1, x.kernels + x.syncs + x.h2d_count + x.d2h_count + x.allocs);
  if (static_cast<double>(x.dropped) / events > kDropWarn) {
    level = std::max(0, level - 1);
    why.push_back("dropped events");
  }
  if (x.truncated) {
    level = std::max(0, level - 1);
    why.push_back("truncated trace");
  }
  static constexpr const char* kLevels[] = {"low", "medium", "high"};
  v.confidence = kLevels[level];
  if (direct) why.insert(why.begin(), "direct evidence (CUDA error codes, environment probe)");
  v.confidence_reason = why.empty() ? "device timestamps, complete trace" : fmt::format("{}", fmt::join(why, "; "));
  if (is_cuda_failure(v.cls))  // what failed, not a share of time
    v.headline = fmt::format("{}, confidence {}", finding_heading(*top), v.confidence);
  else if (v.cls == Bottleneck::Inconclusive)
    v.headline = fmt::format("{} (confidence {})", bottleneck_label(v.cls), v.confidence);
  else
    v.headline = fmt::format("{} ({} of wall time), confidence {}", bottleneck_label(v.cls), pct(v.share),
                             v.confidence);
  return v;
}

}  // namespace

Analysis analyze(const TraceModel& model, const Metrics& metrics) {
  Analysis a;
  a.findings = host_findings(model, metrics);
  for (auto& f : data_movement_findings(model, metrics)) a.findings.push_back(std::move(f));
  std::stable_sort(a.findings.begin(), a.findings.end(), [](const Finding& l, const Finding& r) {
    if ((l.severity == Status::Fail) != (r.severity == Status::Fail)) return l.severity == Status::Fail;
    return l.share > r.share;
  });
  a.verdict = make_verdict(metrics, a.findings);
  const bool cuda_failed = is_cuda_failure(a.verdict.cls);
  if (!metrics.gpu_work_done && !cuda_failed) no_cuda_work(model, metrics, &a);
  else if (!cuda_failed && !enough_evidence(metrics)) too_short(model, metrics, &a);
  // The checks summarize the findings as the verdict left them.
  a.checks = {host_check(metrics, a.findings), useful_work_check(metrics, a.findings),
              memory_check(metrics, a.findings), topology_check(model, metrics, a.findings),
              environment_check(metrics, a.findings)};
  a.coverage = coverage_lines(model, metrics);
  if (model.capture_windows.empty() && !model.capture_trigger.empty()) nothing_captured(model, &a);
  return a;
}

}  // namespace gpuscope::analyzer
