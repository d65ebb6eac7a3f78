// The --json document; docs/analysis.schema.json describes it. Fields are
// only ever added (schema_version changes when a field changes meaning).
#include "report.h"

namespace gpuscope::analyzer {
namespace {

using json = nlohmann::ordered_json;

template <class T> json optional_value(const std::optional<T>& v) { return v ? json(*v) : json(nullptr); }

json gpu_time_breakdown_json(const Metrics& x) {
  if (x.gpu_time_breakdown.empty()) return nullptr;
  json devices = json::array();
  for (const GpuTimeSplit& t : x.gpu_time_breakdown)
    devices.push_back({{"device", t.device},
                       {"span_s", t.span_s},
                       {"sampled_windows", t.sampled_windows},
                       {"idle_share", t.idle_share},
                       {"compute_share", t.compute_share},
                       {"non_compute_share", t.non_compute_share},
                       {"idle_host_wait_share", optional_value(t.host_wait_share)},
                       {"idle_kernel_wait_share", optional_value(t.kernel_wait_share)},
                       {"idle_other_share", optional_value(t.other_wait_share)}});
  return json{{"devices", devices},
              {"last_profiler_step_left_out", x.last_profiler_step_left_out},
              {"operations_left_out", x.gpu_breakdown_left_out}};
}

json range_idle_json(const Metrics& x) {
  json ranges = json::array();
  for (const RangeIdleCover& c : x.idle_under_ranges)
    ranges.push_back({{"name", c.name}, {"domain", c.domain}, {"count", c.count}, {"idle_s", c.idle_s},
                      {"share_of_idle", c.share_of_idle}});
  return ranges;
}

json step_busy_json(const Metrics& x) {
  if (!x.step_busy) return nullptr;
  const StepBusy& s = *x.step_busy;
  return {{"steps", s.steps}, {"median", s.median}, {"lowest", s.lowest}, {"lowest_step", s.lowest_step},
          {"highest", s.highest}, {"highest_step", s.highest_step}};
}

json breakdown_json(const ReportInput& in) {
  const Metrics& x = in.metrics;
  json host = json::object();
  for (size_t k = 0; k < kCallKinds; ++k) host[call_kind_name(static_cast<CallKind>(k))] = x.feeder_share[k];
  host["outside CUDA"] = x.feeder_outside_cuda_share;
  return json{{"wall_s", x.wall_s},
              {"gpu_busy_share", optional_value(x.gpu_util)},
              {"gpu_busy_source", x.gpu_busy_source},
              {"nvml_gpu_util", optional_value(x.nvml_gpu_util)},
              {"nvml_gpu_util_all_processes", optional_value(x.nvml_gpu_util_all)},
              {"other_processes_share", optional_value(x.other_processes_share)},
              {"busiest_other_process", x.busiest_other_process},
              {"other_processes", x.other_processes},
              {"gpu_samples", x.gpu_samples},
              {"host_inferred_gpu_busy", optional_value(x.host_inferred_gpu_busy)},
              {"init_s", x.init_s},
              {"judged_s", x.judged_s},
              {"device_kernel_share", optional_value(x.device_kernel_share)},
              {"device_h2d_share", optional_value(x.device_h2d_share)},
              {"device_d2h_share", optional_value(x.device_d2h_share)},
              {"device_other_copy_share", optional_value(x.device_other_copy_share)},
              {"device_memset_share", optional_value(x.device_memset_share)},
              {"gpu_time_breakdown", gpu_time_breakdown_json(x)},
              {"idle_under_ranges", range_idle_json(x)},
              {"step_gpu_busy", step_busy_json(x)},
              {"feeder_tid", x.feeder_tid},
              {"feeder_blocked_share", host},
              {"feeder_cpu_util", optional_value(x.feeder_cpu_util)},
              {"process_cpu_cores", optional_value(x.process_cpu_cores)},
              {"host_threads_with_cuda", x.host_threads_with_cuda}};
}

json metrics_json(const Metrics& x) {
  return json{{"h2d_bytes", x.h2d_bytes},
              {"d2h_bytes", x.d2h_bytes},
              {"h2d_copies", x.h2d_count},
              {"d2h_copies", x.d2h_count},
              {"pageable_share", optional_value(x.pageable_share)},
              {"small_copy_share", optional_value(x.small_copy_share)},
              {"achieved_gbps", optional_value(x.achieved_gbps)},
              {"link_gbps", optional_value(x.link_gbps)},
              {"link_max_gbps", optional_value(x.link_max_gbps)},
              {"launches", x.launches},
              {"kernels", x.kernels},
              {"graph_launches", x.graph_launches},
              {"graph_kernels", x.graph_kernels},
              {"captured_calls", x.captured_calls},
              {"syncs", x.syncs},
              {"syncs_per_launch", optional_value(x.syncs_per_launch)},
              {"drained_waits", x.drain_judged ? json(x.drained_waits) : json(nullptr)},
              {"drain_share", x.drain_judged ? json(x.drain_share) : json(nullptr)},
              {"allocs", x.allocs},
              {"frees", x.frees},
              {"physical_allocs", x.physical_allocs},  // of them, cuMemCreate
              {"physical_frees", x.physical_frees},    // and cuMemRelease (or the last cuMemUnmap)
              {"alloc_rate_per_s", x.alloc_rate_per_s},
              {"live_peak_bytes", x.live_peak_bytes},
              {"oom_errors", x.oom_errors},
              {"gpu_util", optional_value(x.gpu_util)},
              {"gpu_util_during_launches", optional_value(x.gpu_util_during_launches)},
              {"sm_util", optional_value(x.sm_util)},
              {"dram_util", optional_value(x.dram_util)},
              {"implicit_sync_share", x.implicit_sync_share},
              {"implicit_sync_seconds", x.implicit_sync_host_s},
              {"implicit_sync_calls", x.implicit_sync_calls}};
}

json implicit_syncs_json(const TraceModel& m) {
  json out = json::array();
  for (size_t i = 0; i < kImplicitCauses; ++i) {
    const ImplicitCauseInfo& info = implicit_cause_info(static_cast<ImplicitCause>(i));
    const ImplicitCauseStats& s = m.implicit_syncs.causes[i];
    out.push_back(json{{"cause", info.id}, {"label", info.label}, {"calls", s.total.calls},
                       {"seconds", s.total.ns / 1e9}, {"counted_in_share", info.counts_as_blocked}});
  }
  return out;
}

json frames_json(const ReportInput& in, uint32_t stack_id, Symbolizer::Walk walk = Symbolizer::Walk::Unwound) {
  json frames = json::array();
  // A Python program's stacks run deep through libraries and the interpreter: all of them, up to 64.
  const size_t limit = in.symbols.has_python_frames(stack_id) ? 64 : 8;
  for (const Frame& fr : in.symbols.stack(stack_id, limit, walk)) {
    json frame{{"function", fr.function}, {"file", fr.file}, {"line", fr.line},
               {"module", fr.module}, {"offset", fr.offset}, {"inlined", fr.inlined}};
    if (fr.python) {
      frame["python"] = true;
      frame["user"] = fr.user;
    }
    frames.push_back(std::move(frame));
  }
  return frames;
}

json finding_json(const ReportInput& in, const Finding& f) {
  json sites = json::array();
  for (const CallSite& s : f.sites)
    sites.push_back(json{{"function", s.function}, {"count", s.count}, {"seconds", s.ns / 1e9},
                         {"frames", frames_json(in, s.stack_id)}});
  json host_stacks = json::array();
  for (const HostStackSite& s : f.host_stacks)
    host_stacks.push_back(json{{"samples", s.samples},
                               {"share", s.share},
                               {"frames", frames_json(in, s.stack_id, Symbolizer::Walk::Sampled)}});
  return json{{"id", f.id},           {"class", bottleneck_id(f.cls)}, {"severity", status_label(f.severity)},
              {"share", f.share},     {"title", f.title},              {"evidence", f.evidence},
              {"call_sites", sites},  {"host_stacks", host_stacks}, {"fix", f.fix},
              {"node_condition", f.node_condition},
              {"range", f.range.empty() ? json(nullptr)
                                        : json{{"name", f.range}, {"domain", f.range_domain}, {"share", f.range_share}}}};
}

json nvtx_json(const ReportInput& in) {
  const TraceModel& m = in.model;
  json ranges = json::array();
  for (size_t i = 0; i < m.range_stats.size() && i < in.top; ++i) {
    const RangeStats& r = m.range_stats[i];
    json blocked = json::object();
    for (size_t k = 0; k < kCallKinds; ++k)
      if (r.blocked_ns[k] > 0) blocked[call_kind_name(static_cast<CallKind>(k))] = r.blocked_ns[k] / 1e9;
    ranges.push_back(json{{"name", r.name}, {"domain", r.domain}, {"count", r.count}, {"total_s", r.total_ns / 1e9},
                          {"max_depth", r.max_depth}, {"start_end", r.start_end}, {"unterminated", r.unterminated},
                          {"cuda_calls", r.calls}, {"blocked_s", blocked}});
  }
  json scope = nullptr;
  if (!m.scope_range.empty())
    scope = json{{"range", m.scope_range}, {"spans", m.scope_spans.size()}, {"seconds", m.wall_ns() / 1e9}};
  return json{{"scope", scope},
              {"ranges", ranges},
              {"range_count", m.ranges.ranges.size()},
              {"marks", m.ranges.marks},
              {"unmatched_pops", m.ranges.unmatched_pops},
              {"unmatched_ends", m.ranges.unmatched_ends},
              {"unterminated", m.ranges.unterminated}};
}

// Where the process sits in its run (process trees, docs/trace-format.md).
json process_json(const reader::TraceSummary& s) {
  if (!s.process) return nullptr;
  const reader::ProcessInfo& p = *s.process;
  const auto known = [](int v) { return v >= 0 ? json(v) : json(nullptr); };
  return json{{"ppid", p.ppid},
              {"trace_parent_pid", p.trace_parent_pid > 0 ? json(p.trace_parent_pid) : json(nullptr)},
              {"run_id", p.run_id.empty() ? json(nullptr) : json(p.run_id)},
              {"rank", known(p.rank)},
              {"local_rank", known(p.local_rank)},
              {"world_size", known(p.world_size)},
              {"rank_source", p.rank_source.empty() ? json(nullptr) : json(p.rank_source)}};
}

json coverage_json(const ReportInput& in) {
  json lines = in.analysis.coverage;
  if (const std::string samples = host_samples_coverage_line(in); !samples.empty()) lines.push_back(samples);
  if (!in.metrics.python_note.empty()) lines.push_back("call stacks: " + in.metrics.python_note);
  return lines;
}

}  // namespace

nlohmann::ordered_json json_report(const ReportInput& in) {
  const Verdict& v = in.analysis.verdict;
  json checks = json::array();
  for (const Check& c : in.analysis.checks)
    checks.push_back(json{{"number", c.number}, {"name", c.name}, {"status", status_label(c.status)}, {"details", c.lines}});
  json findings = json::array();
  for (size_t i = 0; i < in.analysis.findings.size() && i < in.top; ++i)
    findings.push_back(finding_json(in, in.analysis.findings[i]));
  const auto& s = in.model.summary;
  return json{{"schema_version", kJsonSchemaVersion},
              {"trace", in.trace_path},
              {"program", s.process ? json(s.process->exe) : json(nullptr)},
              {"pid", s.process ? json(s.process->pid) : json(nullptr)},
              {"process", process_json(s)},
              {"verdict", json{{"class", bottleneck_id(v.cls)}, {"label", bottleneck_label(v.cls)},
                               {"share", v.share}, {"confidence", v.confidence},
                               {"confidence_reason", v.confidence_reason}}},
              {"breakdown", breakdown_json(in)},
              {"metrics", metrics_json(in.metrics)},
              {"checks", checks},
              {"findings", findings},
              {"nvtx", nvtx_json(in)},
              {"requests", requests_json(in)},
              {"implicit_syncs", implicit_syncs_json(in.model)},
              {"coverage", coverage_json(in)}};
}

}  // namespace gpuscope::analyzer
