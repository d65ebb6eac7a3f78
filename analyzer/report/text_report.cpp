#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "environment.h"
#include "report.h"
#include "site_merge.h"
#include "units.h"

namespace gpuscope::analyzer {
namespace {

constexpr size_t kFramesPerSite = kSiteFramesShown;

void header(std::string& out, const ReportInput& in) {
  const auto& s = in.model.summary;
  const std::string program = s.process ? s.process->exe : "unknown program";
  const std::string pid = s.process ? fmt::format(" (pid {})", s.process->pid) : "";
  std::string gpu = "no GPU described";
  if (!s.devices.empty()) gpu = s.devices.front().name + (s.devices.size() > 1 ? fmt::format(" +{}", s.devices.size() - 1) : "");
  out += fmt::format("gpuscope analysis of {}\n", in.trace_path);
  out += fmt::format("program: {}{}, {:.3f} s traced, GPU: {}\n", program, pid, in.metrics.wall_s, gpu);
  const TraceModel& m = in.model;
  if (!m.capture_windows.empty() && m.scope_range.empty())
    out += fmt::format("scope: {} capture window(s), {:.3f} s captured; figures below are for that time only\n",
                       m.capture_windows.size(), m.wall_ns() / 1e9);
  if (!m.device_windows.empty())
    out += fmt::format("device activity sampled ({}): {} window(s), {:.3f} s with device records; figures below are "
                       "for that time only\n",
                       m.device_schedule, m.device_windows.size(), spans_length(m.device_windows) / 1e9);
  if (!m.scope_range.empty())
    out += fmt::format("scope: NVTX range \"{}\": {} span(s), {:.3f} s of the {:.3f} s traced; figures below are "
                       "for that time only\n",
                       m.scope_range, m.scope_spans.size(), m.wall_ns() / 1e9,
                       (m.end_ns > m.begin_ns ? m.end_ns - m.begin_ns : 0) / 1e9);
  out += "\n";
}

std::string range_label(const std::string& name, const std::string& domain) {
  return domain.empty() ? name : fmt::format("{} [{}]", name, domain);
}

void verdict(std::string& out, const ReportInput& in) {
  const Verdict& v = in.analysis.verdict;
  out += fmt::format("VERDICT: {}\n", v.headline);
  for (const Finding& f : in.analysis.findings)
    if (f.cls == v.cls && f.severity == Status::Fail) {
      if (v.headline.find(f.title) == std::string::npos) out += fmt::format("         {}\n", f.title);
      break;
    }
  out += fmt::format("         confidence {}: {}\n\n", v.confidence, v.confidence_reason);
}

// GPU busy without device timestamps: NVML's figure, the host's inference,
// or why there is none; each says where it came from.
std::string gpu_busy_line(const Metrics& x) {
  if (x.gpu_busy_source == "nvml" && x.nvml_gpu_util_all)
    return fmt::format("  GPU busy: {} (this process's part of NVML utilization, {} samples, by the driver's "
                       "per-process samples; split into kernels/copies/memsets needs device timestamps), other "
                       "processes {} (most of it {}), idle {}\n",
                       pct(*x.gpu_util), x.gpu_samples, pct(*x.nvml_gpu_util_all - *x.gpu_util),
                       x.busiest_other_process, pct(1 - *x.nvml_gpu_util_all));
  if (x.gpu_busy_source == "nvml")
    return fmt::format("  GPU busy: {} (NVML utilization, {} samples; split into kernels/copies/memsets needs "
                       "device timestamps), idle {}\n",
                       pct(*x.gpu_util), x.gpu_samples, pct(1 - *x.gpu_util));
  std::string nvml = x.nvml_gpu_util ? fmt::format("{} NVML sample(s) ({}) are too few to measure it (at least {}); ",
                                                   x.gpu_samples, pct(*x.nvml_gpu_util), kMinGpuSamples)
                                     : std::string("no NVML samples; ");
  if (x.gpu_busy_source == "host")
    return fmt::format("  GPU busy: at least {} (inferred from the host: {} synchronization(s) waited on queued "
                       "work; {}no device timestamps)\n",
                       pct(*x.gpu_util), x.waits_on_queued, nvml);
  return fmt::format("  GPU busy: unknown ({}no device timestamps, no synchronization waited on queued work)\n", nvml);
}

// HTA's split of the GPU's time (gpu_breakdown.h), one line per device and
// one for the causes of its idle time.
void gpu_time_breakdown(std::string& out, const Metrics& x) {
  const auto share = [](double v) { return fmt::format("{:.1f}%", v * 100); };
  for (const GpuTimeSplit& t : x.gpu_time_breakdown) {
    const std::string which = x.gpu_time_breakdown.size() == 1 ? ""
                              : t.device < 0                   ? " of operations on no known device"
                                                               : fmt::format(" of device {}", t.device);
    const std::string over =
        t.sampled_windows == 0
            ? fmt::format("over the {:.3f} s from the first GPU operation to the last", t.span_s)
            : fmt::format("over the {:.3f} s of the {} sampled window(s) from the first GPU operation to the last; "
                          "no idle split: a stream's gaps cross windows",
                          t.span_s, t.sampled_windows);
    out += fmt::format("    GPU time breakdown{} (as HTA computes it, {}): idle {}, compute {}, non-compute {}\n", which,
                       over, share(t.idle_share), share(t.compute_share), share(t.non_compute_share));
    if (t.host_wait_share)
      out += fmt::format("      idle: host wait {}, kernel wait {}, other {} (gaps between operations on each stream)\n",
                         share(*t.host_wait_share), share(*t.kernel_wait_share), share(*t.other_wait_share));
  }
  if (x.last_profiler_step_left_out)
    out += fmt::format("      the last profiler step is left out, as HTA leaves it out ({} GPU operation(s) launched in "
                       "it or with no launch call found)\n",
                       x.gpu_breakdown_left_out);
}

void breakdown(std::string& out, const ReportInput& in) {
  const Metrics& x = in.metrics;
  out += fmt::format("TIME BREAKDOWN (wall {:.3f} s)\n", x.wall_s);
  if (x.gpu_busy_source == "device") {
    out += fmt::format("  GPU busy: {} (device timestamps), idle {}\n", pct(*x.gpu_util), pct(1 - *x.gpu_util));
    out += fmt::format("    kernels {}, host-to-device copies {}, device-to-host copies {}, other copies {}, "
                       "memsets {} (overlaps counted in each)\n",
                       pct(*x.device_kernel_share), pct(*x.device_h2d_share), pct(*x.device_d2h_share),
                       pct(*x.device_other_copy_share), pct(*x.device_memset_share));
    gpu_time_breakdown(out, x);
    if (const auto& s = x.step_busy)
      out += fmt::format("    per profiler step ({} steps): GPU busy median {}, lowest {} ({}), highest {} ({})\n", s->steps,
                         pct(s->median), pct(s->lowest), s->lowest_step, pct(s->highest), s->highest_step);
    if (x.nvml_gpu_util) out += fmt::format("    NVML utilization for comparison: {}\n", pct(*x.nvml_gpu_util));
  } else {
    out += gpu_busy_line(x);
  }
  if (x.init_s > 0)
    out += fmt::format("  initialization: {:.3f} s (CUDA driver and context{}); {:.3f} s judged after it\n", x.init_s,
                       x.context_init_call.empty() ? "" : ", the context created in " + x.context_init_call, x.judged_s);
  out += fmt::format("  feeding host thread (tid {}), time blocked in CUDA calls:\n", x.feeder_tid);
  const auto& t = in.model.threads.count(x.feeder_tid) ? in.model.threads.at(x.feeder_tid) : ThreadActivity{};
  for (size_t k = 0; k < kCallKinds; ++k) {
    if (t.blocked_ns[k] == 0) continue;
    out += fmt::format("    {:<18} {:>9.3f} s  {:>4}\n", call_kind_name(static_cast<CallKind>(k)), t.blocked_ns[k] / 1e9,
                       pct(x.feeder_share[k]));
  }
  out += fmt::format("    {:<18} {:>9.3f} s  {:>4}", "outside CUDA", x.feeder_outside_cuda_share * x.wall_s,
                     pct(x.feeder_outside_cuda_share));
  out += x.feeder_cpu_util ? fmt::format("   (thread on CPU {} of its time)\n", pct(*x.feeder_cpu_util)) : "\n";
  if (x.feeder_cpu_share)
    out += fmt::format("    the feeding thread did {} of the process's CPU work\n", pct(*x.feeder_cpu_share));
  for (size_t i = 0; i < std::min<size_t>(3, x.sync_calls.size()); ++i)
    out += fmt::format("    {}{}: {} calls, {:.3f} s\n", i == 0 ? "synchronization by call: " : "                         ",
                       x.sync_calls[i].first, x.sync_calls[i].second.count, x.sync_calls[i].second.ns / 1e9);
  if (x.host_threads_with_cuda > 1)
    out += fmt::format("  {} host threads made CUDA calls; all threads together: {:.3f} s in copies, {:.3f} s in "
                       "synchronization\n",
                       x.host_threads_with_cuda, x.copy_host_s, x.sync_host_s);
  if (x.process_cpu_cores) out += fmt::format("  process CPU: {:.2f} cores on average\n", *x.process_cpu_cores);
  out += "\n";
}

void checks(std::string& out, const ReportInput& in) {
  out += "CHECKS\n";
  for (const Check& c : in.analysis.checks) {
    out += fmt::format("  {} [{}] {}\n", c.number, status_label(c.status), c.name);
    for (const auto& line : c.lines) out += fmt::format("        {}\n", line);
  }
  out += "\n";
}

void sites(std::string& out, const ReportInput& in, const Finding& f) {
  if (f.sites.empty()) return;
  out += "     call sites:\n";
  for (const CallSite& s : f.sites) {
    out += fmt::format("       {} x{}, {:.3f} s\n", s.function, s.count, s.ns / 1e9);
    const auto frames = in.symbols.site_frames(s.stack_id, kFramesPerSite);
    if (s.stack_id == 0) out += "           (no call stack recorded)\n";
    for (const Frame& fr : frames) out += fmt::format("           at {}\n", fr.text());
  }
}

void host_stacks(std::string& out, const ReportInput& in, const Finding& f) {
  if (f.host_stacks.empty()) return;
  out += "     host stacks (CPU samples):\n";
  for (const HostStackSite& s : f.host_stacks) {
    out += fmt::format("       {} of the samples ({})\n", pct(s.share), s.samples);
    if (s.stack_id == 0) out += "           (no stack: the stack table was full)\n";
    for (const Frame& fr : in.symbols.stack(s.stack_id, kFramesPerSite, Symbolizer::Walk::Sampled))
      out += fmt::format("           at {}\n", fr.text());
  }
}

void findings(std::string& out, const ReportInput& in) {
  out += "FINDINGS\n";
  if (in.analysis.findings.empty()) out += "  none: no rule found a cause above its threshold\n";
  size_t n = 0;
  for (const Finding& f : in.analysis.findings) {
    if (++n > in.top) break;
    if (f.node_condition)
      out += fmt::format("  {}. [{}] node: {}\n", n, status_label(f.severity), f.title);
    else if (is_cuda_failure(f.cls))
      out += fmt::format("  {}. [{}] {}\n", n, status_label(f.severity), finding_heading(f));
    else
      out += fmt::format("  {}. [{}] {}: {} ({} of wall time)\n", n, status_label(f.severity), bottleneck_label(f.cls),
                         f.title, pct(f.share));
    for (const auto& e : f.evidence) out += fmt::format("     - {}\n", e);
    if (!f.range.empty())
      out += fmt::format("     in NVTX range: {} ({} of this finding's host time)\n", range_label(f.range, f.range_domain),
                         pct(f.range_share));
    sites(out, in, f);
    host_stacks(out, in, f);
    out += fmt::format("     fix: {}\n", f.fix);
  }
  out += "\n";
}

// The busiest kind of host call inside a range, for its one-line summary.
std::string busiest_kinds(const RangeStats& r) {
  std::string out;
  std::array<size_t, kCallKinds> order{};
  for (size_t k = 0; k < kCallKinds; ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return r.blocked_ns[a] > r.blocked_ns[b]; });
  for (size_t i = 0; i < 2 && r.blocked_ns[order[i]] > 0; ++i)
    out += fmt::format("{}{} {:.3f} s", out.empty() ? "" : ", ", call_kind_name(static_cast<CallKind>(order[i])),
                       r.blocked_ns[order[i]] / 1e9);
  return out.empty() ? "no CUDA calls" : out;
}

void nvtx_ranges(std::string& out, const ReportInput& in) {
  const TraceModel& m = in.model;
  const RangeModel& r = m.ranges;
  if (r.empty() && r.marks == 0) return;
  out += fmt::format("NVTX RANGES (top {} by total time; host time in CUDA calls inside, innermost range)\n", in.top);
  size_t n = 0;
  for (const RangeStats& st : m.range_stats) {
    if (++n > in.top) break;
    std::string notes;
    if (st.max_depth > 0) notes += fmt::format(", nested to depth {}", st.max_depth);
    if (st.start_end) notes += ", start/end";
    if (st.unterminated > 0) notes += fmt::format(", {} unterminated (closed at trace end)", st.unterminated);
    out += fmt::format("  {:<24} x{:<6} {:>9.3f} s  {}{}\n", range_label(st.name, st.domain), st.count,
                       st.total_ns / 1e9, busiest_kinds(st), notes);
  }
  if (m.range_stats.size() > in.top) out += fmt::format("  ... {} more range names\n", m.range_stats.size() - in.top);
  out += fmt::format("  {} range(s), {} mark(s); {} unmatched pop(s), {} unmatched end(s), {} unterminated\n",
                     r.ranges.size(), r.marks, r.unmatched_pops, r.unmatched_ends, r.unterminated);
  if (r.events_over_limit > 0)
    out += fmt::format("  {} range events past the analyzer's limit were not paired\n", r.events_over_limit);
  out += "\n";
}

void coverage(std::string& out, const ReportInput& in) {
  out += "COVERAGE\n";
  for (const auto& line : in.analysis.coverage) out += fmt::format("  - {}\n", line);
  if (const std::string stacks = stacks_coverage_line(in); !stacks.empty()) out += fmt::format("  - {}\n", stacks);
  if (const std::string samples = host_samples_coverage_line(in); !samples.empty())
    out += fmt::format("  - {}\n", samples);
}

}  // namespace

std::string stacks_coverage_line(const ReportInput& in) {
  const uint64_t unsym = in.symbols.unsymbolized(), sym = in.symbols.symbolized();
  std::string note = in.metrics.stacks_note;
  if (!in.metrics.python_note.empty()) note += (note.empty() ? "" : "; ") + in.metrics.python_note;
  if (sym + unsym > 0)
    return fmt::format("call stacks: {} frames shown symbolized, {} as module+offset{}", sym, unsym,
                       note.empty() ? "" : "; " + note);
  return note.empty() ? "" : "call stacks: " + note;
}

std::string host_samples_coverage_line(const ReportInput& in) {
  const auto& status = in.model.summary.host_sampling;
  if (!status) return "";  // a trace from before format 1.4
  switch (static_cast<fb::HostSamplingState>(status->state)) {
    case fb::HostSamplingState::Off:
      return fmt::format("CPU stack samples: off (--cpu-sampling 0 or {}=0)", protocol::env::kCpuSampling);
    case fb::HostSamplingState::Unavailable: return "CPU stack samples: unavailable (" + status->reason + ")";
    case fb::HostSamplingState::Active: break;
    default: return fmt::format("CPU stack samples: unknown state {}", status->state);
  }
  std::string line = fmt::format("CPU stack samples: {} in the analyzed time ({} in the trace), {} thread(s), one per "
                                 "{:.1f} ms of a thread's user-mode CPU time",
                                 in.model.host_samples.samples, status->samples, status->threads,
                                 status->period_ns / 1e6);
  if (status->lost != 0) line += fmt::format("; {} lost (the writer fell behind)", status->lost);
  if (status->threads_refused != 0)
    line += fmt::format("; {} thread(s) not sampled ({})", status->threads_refused, status->reason);
  return line;
}

std::string text_report(const ReportInput& in) {
  std::string out;
  header(out, in);
  verdict(out, in);
  breakdown(out, in);
  checks(out, in);
  findings(out, in);
  out += requests_text(in);
  nvtx_ranges(out, in);
  coverage(out, in);
  return out;
}

}  // namespace gpuscope::analyzer
