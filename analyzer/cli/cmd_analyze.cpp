// gpuscope analyze: the verdict, breakdown, checks, findings and coverage of
// one or more traces (a directory stands for the traces in it).
#include <filesystem>
#include <functional>

#include <fmt/format.h>

#include "commands.h"
#include "metrics.h"
#include "prometheus_report.h"
#include "report.h"
#include "rules.h"
#include "symbolizer.h"
#include "trace_model.h"

namespace gpuscope::cli {

std::vector<std::string> expand_inputs(const std::vector<std::string>& inputs) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  for (const auto& in : inputs) {
    std::error_code ec;
    if (!fs::is_directory(in, ec)) {
      out.push_back(in);
      continue;
    }
    std::vector<std::string> found;
    for (const auto& e : fs::directory_iterator(in, ec))
      if (e.path().extension() == ".gpuscope") found.push_back(e.path().string());
    std::sort(found.begin(), found.end());
    if (found.empty()) out.push_back(in);  // reported as unreadable below
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

namespace {

// The model, with host calls placed in NVTX ranges when the trace has any:
// the first pass finds the ranges, a second one (only then) attributes, and
// with --range keeps only the time inside the named ranges. 0, or 2 with
// the reason printed. Both passes share the reader: damage is read once.
int build_scoped_model(reader::TraceReader& r, const std::string& path, const analyzer::TimeWindow& window,
                       const std::string& range, analyzer::TraceModel* model) {
  *model = analyzer::build_model(r, window);
  const std::vector<std::pair<uint64_t, uint64_t>> captured = model->capture_windows;
  if (model->ranges.empty() && range.empty() && captured.empty()) return 0;
  // A windowed capture is analyzed over its windows only: the GPU and CPU
  // samples taken between them are not the program's captured time.
  std::vector<std::pair<uint64_t, uint64_t>> scope = captured;
  if (!range.empty()) {
    scope = analyzer::range_spans(*model, range);
    if (!captured.empty()) scope = analyzer::intersect_spans(scope, captured);
    if (scope.empty()) {
      fmt::print(stderr, "gpuscope: --range {}: {} has no NVTX range with that message{}\n", range, path,
                 captured.empty() ? "" : " inside its capture windows");
      return 2;
    }
  }
  const analyzer::RangeModel ranges = std::move(model->ranges);
  *model = analyzer::build_model(r, window, &ranges, scope);
  model->scope_range = range;
  return 0;
}

// What one analysis hands back; each output is filled when not null.
struct AnalysisOutputs {
  std::string* text = nullptr;
  nlohmann::ordered_json* json = nullptr;
  TraceHeadline* headline = nullptr;
  analyzer::ProcessEntry* process = nullptr;  // the trace's place in its process tree
};

}  // namespace

void warn_problems(const std::string& path, const std::vector<reader::Problem>& problems) {
  for (const auto& p : problems)
    if (p.kind != reader::ProblemKind::NoTotals)
      fmt::print(stderr, "gpuscope: warning: {}: {}\n", path, reader::describe(p));
}

int with_analysis(const std::string& path, const AnalyzeOptions& options, bool warn, const AnalysisUse& use) {
  analyzer::TimeWindow window;
  if (!options.window.empty() && !analyzer::parse_window(options.window, &window)) {
    fmt::print(stderr, "gpuscope: --window {}: expected START:END in seconds, END after START (e.g. 2:10, 5:)\n",
               options.window);
    return 2;
  }
  reader::TraceReader r;
  std::string error;
  if (!r.open_file(path, &error)) {
    fmt::print(stderr, "gpuscope: {}\n", error);
    return 2;
  }
  analyzer::TraceModel model;
  if (const int rc = build_scoped_model(r, path, window, options.range, &model); rc != 0) return rc;
  if (warn) warn_problems(path, model.summary.problems);
  const analyzer::Metrics metrics = analyzer::compute_metrics(model);
  analyzer::Analysis analysis = analyzer::analyze(model, metrics);
  analyzer::attribute_findings_to_ranges(model, &analysis);
  const analyzer::Symbolizer symbols(model.summary);
  use(analyzer::ReportInput{path, model, metrics, analysis, symbols, options.top}, r);
  return 0;
}

namespace {

// 0 analyzed, 2 unreadable (the reason printed on stderr).
int analyze_one(const std::string& path, const AnalyzeOptions& options, const AnalysisOutputs& out) {
  return with_analysis(path, options, out.text != nullptr || out.json != nullptr,
                       [&](const analyzer::ReportInput& in, reader::TraceReader&) {
    if (out.headline != nullptr) *out.headline = TraceHeadline{in.model.summary, in.analysis.verdict.headline};
    if (out.process != nullptr) *out.process = analyzer::process_entry(in);
    if (out.json != nullptr) *out.json = analyzer::json_report(in);
    if (out.text != nullptr) *out.text = analyzer::text_report(in);
  });
}

// One trace: its document. Several: the documents and the process trees
// they form, one per run id (docs/analysis.schema.json).
void print_json(nlohmann::ordered_json traces, const std::vector<analyzer::ProcessTree>& trees) {
  if (traces.size() == 1) {
    fmt::print("{}\n", traces[0].dump(2));
    return;
  }
  nlohmann::ordered_json tree_docs = nlohmann::ordered_json::array();
  for (const auto& tree : trees) tree_docs.push_back(analyzer::tree_json(tree));
  const nlohmann::ordered_json doc{{"schema_version", analyzer::kJsonSchemaVersion},
                                   {"traces", std::move(traces)},
                                   {"trees", std::move(tree_docs)}};
  fmt::print("{}\n", doc.dump(2));
}

}  // namespace

bool analyze_headline(const std::string& path, TraceHeadline* out, analyzer::ProcessEntry* process) {
  return analyze_one(path, AnalyzeOptions{}, AnalysisOutputs{.headline = out, .process = process}) == 0;
}

namespace {

// Every trace's samples, then one exposition (each family once).
int prometheus_command(const AnalyzeOptions& options) {
  int status = 0;
  std::vector<analyzer::PrometheusSample> samples;
  for (const auto& path : expand_inputs(options.inputs)) {
    const int rc = with_analysis(path, options, true, [&](const analyzer::ReportInput& in, reader::TraceReader&) {
      auto more = analyzer::prometheus_samples(in, options.job);
      samples.insert(samples.end(), more.begin(), more.end());
    });
    if (rc != 0) status = rc;
  }
  fmt::print("{}", analyzer::prometheus_text(samples));
  return status;
}

}  // namespace

int analyze_command(const AnalyzeOptions& given) {
  AnalyzeOptions options = given;
  if (options.format == "json") options.json = true;
  if (options.format == "prometheus" && !options.json) return prometheus_command(options);
  int status = 0;
  nlohmann::ordered_json all = nlohmann::ordered_json::array();
  std::vector<analyzer::ProcessEntry> processes;
  bool first = true;
  for (const auto& path : expand_inputs(options.inputs)) {
    std::string text;
    nlohmann::ordered_json json;
    analyzer::ProcessEntry process;
    AnalysisOutputs out{.process = &process};
    if (options.json) out.json = &json;
    else out.text = &text;
    const int rc = analyze_one(path, options, out);
    if (rc != 0) {
      status = rc;
      continue;
    }
    processes.push_back(std::move(process));
    if (options.json) {
      all.push_back(std::move(json));
    } else {
      fmt::print("{}{}", first ? "" : "\n", text);
      first = false;
    }
  }
  const auto trees = analyzer::build_process_trees(std::move(processes));
  if (options.json) {
    print_json(std::move(all), trees);
    return status;
  }
  // A tree section only where traces link up: a lone trace is its own report.
  for (const auto& tree : trees)
    if (tree.process_count() > 1) fmt::print("\n{}", analyzer::tree_text(tree));
  return status;
}

}  // namespace gpuscope::cli
