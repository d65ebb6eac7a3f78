#include "pipeline.h"

#include "import.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>
#include "host_profile.h"
#include "profiler_windows.h"
#include "pytorch_shapes.h"
#include "site_merge.h"

namespace gpuscope::analyzer {

std::optional<PipelineError> parse_scope(const std::string& window, const std::string& range, AnalysisScope* out) {
  AnalysisScope scope;
  if (!window.empty() && !parse_window(window, &scope.window))
    return PipelineError{"--window " + window + ": expected START:END in seconds, END after START (e.g. 2:10, 5:)"};
  scope.range = range;
  *out = std::move(scope);
  return std::nullopt;
}

std::shared_ptr<const GpuTenants> read_gpu_tenants(const std::vector<std::string>& paths) {
  auto tenants = std::make_shared<GpuTenants>();
  for (const auto& path : paths) {
    reader::TraceReader trace;
    if (std::string ignored; importer::open_trace(trace, path, &ignored))
      tenants->push_back(read_gpu_tenant(trace, path));
  }
  return tenants;
}

TraceAnalysis::TraceAnalysis(std::string path, std::unique_ptr<reader::TraceReader> reader)
    : path_(std::move(path)), reader_(std::move(reader)) {}

TraceAnalysis::~TraceAnalysis() = default;

ReportInput TraceAnalysis::report_input(size_t top) const {
  return ReportInput{path_, model_, metrics_, analysis_, *symbols_, top};
}

// The first pass builds the whole model and finds the trace's NVTX ranges
// and capture windows. Only when there are some does a second pass (sharing
// the reader: damage is read once) place host calls in the ranges, and keep
// only the windows' time (a windowed capture's GPU and CPU samples between
// windows are not the program's captured time) or, with --range, only the
// named ranges' time. Without such a scope the second pass changes nothing
// but the ranges' time, so a following pass made from the first model can
// ride along.
namespace {

bool whole_trace(const TimeWindow& w) { return w.start_s <= 0 && w.end_s < 0; }

// A window past the end (or before the start) selects nothing: analyzing
// nothing would give a verdict about no time at all.
std::optional<PipelineError> empty_window(const TraceModel& m, const TimeWindow& w, const std::string& path) {
  if (whole_trace(w) || m.end_ns > m.begin_ns) return std::nullopt;
  const reader::TraceSummary& s = m.summary;
  const uint64_t origin = s.process && s.process->start_monotonic_ns != 0 ? s.process->start_monotonic_ns : s.first_ns;
  const uint64_t end = std::max(s.last_ns, s.end ? s.end->end_monotonic_ns : 0);
  const double span = end > origin ? (end - origin) / 1e9 : 0;
  const std::string to = w.end_s < 0 ? "" : fmt::format("{:g}", w.end_s);
  return PipelineError{fmt::format("--window {:g}:{}: {} spans 0.000-{:.3f} s from the process start; the window "
                                   "selects none of it",
                                   w.start_s, to, path, span)};
}

// --requests NAME: the ranges with that message starting in the window, or
// with --requests cudaProfilerApi the profiler API's windows (`windows`).
std::optional<PipelineError> select_requests(const TraceModel& m, const AnalysisScope& scope, const std::string& path,
                                             ProfilerWindows* windows, std::vector<RangeInstance>* out) {
  if (scope.requests.empty()) return std::nullopt;
  const bool profiler = windows != nullptr;
  std::vector<RangeInstance> candidates;
  if (profiler) candidates = windows->finish(m.end_ns);
  else
    for (const size_t i : ranges_named(m, scope.requests)) candidates.push_back(m.ranges.ranges[i]);
  for (const RangeInstance& r : candidates)
    if (r.start_ns >= m.begin_ns && r.start_ns < m.end_ns) out->push_back(r);
  if (out->empty() && !scope.requests_optional)
    return PipelineError{"--requests " + scope.requests + ": " + path +
                         (profiler ? " has no cudaProfilerStart or cuProfilerStart call"
                                   : " has no NVTX range with that message") +
                         (whole_trace(scope.window) ? "" : " starting in the window")};
  return std::nullopt;
}

// The time a verdict can be judged in: capture windows (nothing else was
// recorded) and, with sampled device tracing, its windows (device records
// only there: GPU busy, idle and kernel time outside them are unknown, so
// host figures are taken over the same time).
std::vector<std::pair<uint64_t, uint64_t>> judged_windows(const TraceModel& m) {
  if (m.device_windows.empty()) return m.capture_windows;
  if (m.capture_windows.empty()) return m.device_windows;
  return intersect_spans(m.device_windows, m.capture_windows);
}

}  // namespace

std::optional<PipelineError> TraceAnalysis::build_model(const AnalysisScope& scope, const FollowingPass& following) {
  std::unique_ptr<ProfilerWindows> windows;
  reader::ChunkVisitor first_pass_also;
  if (scope.requests == kProfilerApiRequests) {
    windows = std::make_unique<ProfilerWindows>();
    first_pass_also = [w = windows.get()](const reader::ChunkView& v) { w->add(v); };
  }
  model_ = analyzer::build_model(*reader_, scope.window, nullptr, {}, first_pass_also);
  if (auto error = empty_window(model_, scope.window, path_)) return error;
  std::vector<RangeInstance> requests;
  if (auto error = select_requests(model_, scope, path_, windows.get(), &requests)) return error;
  const std::vector<std::pair<uint64_t, uint64_t>> captured = judged_windows(model_);
  if (model_.ranges.empty() && scope.range.empty() && captured.empty() && requests.empty()) return std::nullopt;
  std::vector<std::pair<uint64_t, uint64_t>> spans = captured;
  if (!scope.range.empty()) {
    spans = range_spans(model_, scope.range);
    if (!captured.empty()) spans = intersect_spans(spans, captured);
    if (spans.empty())
      return PipelineError{"--range " + scope.range + ": " + path_ + " has no NVTX range with that message" +
                           (captured.empty() ? "" : " inside its capture windows")};
  }
  const RangeModel ranges = std::move(model_.ranges);
  reader::ChunkVisitor riding;
  if (following && spans.empty()) {
    model_.ranges = ranges;
    first_model_ = std::make_unique<TraceModel>(std::move(model_));
    first_metrics_ = std::make_unique<Metrics>(compute_metrics(*first_model_));
    riding = following(*first_model_, *first_metrics_);
  }
  std::unique_ptr<RequestTally> tally;
  if (!requests.empty()) {
    const reader::TraceSummary& names = first_model_ != nullptr ? first_model_->summary : model_.summary;
    tally = std::make_unique<RequestTally>(names, scope.requests, requests, scope.tail_quantile);
    if (scope.tenants != nullptr)
      tally->set_co_tenants(co_tenants_of(names, *scope.tenants), others_than(names, *scope.tenants));
    riding = [tally = tally.get(), riding = std::move(riding)](const reader::ChunkView& v) {
      tally->add(v);
      if (riding) riding(v);
    };
  }
  model_ = analyzer::build_model(*reader_, scope.window, &ranges, spans, riding);
  model_.scope_range = scope.range;
  if (tally != nullptr) requests_ = tally->finish();
  return std::nullopt;
}

// Symbols first: the CPU-bound rule names the functions the CPU samples
// fell in (host_profile.h).
void TraceAnalysis::run_rules(Detail detail) {
  symbols_ = std::make_unique<Symbolizer>(
      model_.summary, detail == Detail::Full ? Symbolizer::Modules::Read : Symbolizer::Modules::Unread);
  profile_host_samples(*symbols_, &model_.host_samples);
  metrics_ = compute_metrics(model_);
  analysis_ = analyze(model_, metrics_);
  analysis_.requests = std::move(requests_);
  add_tail_finding(model_, &analysis_);
  attribute_findings_to_ranges(model_, &analysis_);
  merge_sites_shown_alike(*symbols_, &analysis_);
  name_pytorch_shapes(*symbols_, model_, metrics_, &analysis_);
}

PipelineResult analyze_trace(std::unique_ptr<reader::ByteSource> source, const std::string& name,
                             const AnalysisScope& scope, const FollowingPass& following, Detail detail) {
  PipelineResult result;
  auto reader = std::make_unique<reader::TraceReader>();
  if (!reader->open(std::move(source), name, &result.error.message)) return result;
  std::unique_ptr<TraceAnalysis> analysis(new TraceAnalysis(name, std::move(reader)));
  if (auto error = analysis->build_model(scope, following)) {
    result.error = std::move(*error);
    return result;
  }
  analysis->run_rules(detail);
  if (following && analysis->first_model_ == nullptr)  // the report's timeline: as costly per record as the model
    analysis->reader_->read_overlapped(following(analysis->model_, analysis->metrics_));
  result.analysis = std::move(analysis);
  return result;
}

PipelineResult analyze_trace(const std::string& path, const AnalysisScope& scope, const FollowingPass& following,
                             Detail detail) {
  PipelineResult result;
  auto source = importer::open_trace_source(path, &result.error.message);
  if (source == nullptr) return result;
  return analyze_trace(std::move(source), path, scope, following, detail);
}

}  // namespace gpuscope::analyzer
