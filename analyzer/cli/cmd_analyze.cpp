// gpuscope analyze: the verdict, breakdown, checks, findings and coverage of
// one or more traces (a directory stands for the traces in it).
#include <filesystem>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "import.h"
#include "commands.h"
#include "messages.h"
#include "output_paths.h"
#include "profiler_windows.h"
#include "prometheus_report.h"
#include "report.h"

namespace gpuscope::cli {

namespace {

// In a directory: gpuscope traces, and other profilers' files by their
// usual names (rank-0.pt.trace.json.gz, report.sqlite) when their content
// says so too (a config.json beside them is not a trace): the import
// targets of the entry, none when it is not one.
std::vector<std::string> traces_in_directory_entry(const std::filesystem::path& p) {
  const std::string name = p.filename().string();
  const bool native = name.ends_with(".gpuscope");
  if (!native && !name.ends_with(".json") && !name.ends_with(".json.gz") && !name.ends_with(".sqlite")) return {};
  importer::SourceFormat format = importer::SourceFormat::Unknown;
  auto targets = importer::expand_foreign_inputs(p.string(), &format);  // one per process of an nsys export
  if (!native && format == importer::SourceFormat::Unknown) return {};
  return targets;
}

}  // namespace

std::vector<std::string> expand_inputs(const std::vector<std::string>& inputs) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  for (const auto& in : inputs) {
    std::error_code ec;
    if (!fs::is_directory(in, ec)) {
      const auto targets = importer::expand_foreign_inputs(in);  // one per process of an nsys export
      out.insert(out.end(), targets.begin(), targets.end());
      continue;
    }
    std::vector<std::string> found;
    for (const auto& e : fs::directory_iterator(in, ec)) {
      const auto targets = traces_in_directory_entry(e.path());
      found.insert(found.end(), targets.begin(), targets.end());
    }
    std::sort(found.begin(), found.end());
    if (found.empty()) out.push_back(in);  // reported as unreadable below
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

void warn_problems(const std::string& path, const std::vector<reader::Problem>& problems) {
  for (const auto& p : problems)
    if (p.kind != reader::ProblemKind::NoTotals) print_warning("{}: {}", path, reader::describe(p));
}

std::unique_ptr<analyzer::TraceAnalysis> analyze_path(const std::string& path, const analyzer::AnalysisScope& scope,
                                                      bool warn, const analyzer::FollowingPass& following,
                                                      std::string* failure, analyzer::Detail detail) {
  analyzer::PipelineResult result = analyzer::analyze_trace(path, scope, following, detail);
  if (result.analysis == nullptr) {
    print_error("{}", result.error.message);
    if (failure != nullptr) *failure = result.error.message;
    return nullptr;
  }
  if (warn) warn_problems(path, result.analysis->problems());
  if (const std::string* damage = result.analysis->import_damage(); damage != nullptr && warn)
    print_error("{}: {} (what came before it was analyzed)", path, *damage);
  return std::move(result.analysis);
}

void headline_of(const analyzer::TraceAnalysis& analysis, TraceHeadline* out, analyzer::ProcessEntry* process) {
  *out = TraceHeadline{analysis.model().summary, analysis.analysis().verdict.headline};
  if (process != nullptr) *process = analyzer::process_entry(analysis.report_input(AnalyzeOptions{}.top));
}

// The headline alone: addresses are left unnamed (pipeline.h, Detail).
bool analyze_headline(const std::string& path, TraceHeadline* out, analyzer::ProcessEntry* process) {
  const auto analysis = analyze_path(path, {}, false, {}, nullptr, analyzer::Detail::Verdict);
  if (analysis == nullptr) return false;
  headline_of(*analysis, out, process);
  return true;
}

namespace {

// One input: its document, or when it cannot be analyzed the same shape
// with the reason ({"schema_version", "trace", "error"}), so a script reads
// one trace's answer either way. Several: the documents and the process
// trees they form, one per run id (docs/analysis.schema.json).
void print_json(size_t inputs, nlohmann::ordered_json traces, const std::vector<analyzer::ProcessTree>& trees) {
  if (inputs == 1) {
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

// --requests over several traces: each one's GPU occupancy, so that a
// process on the same GPU is set against the requests of another
// (co_tenants.h), and a trace without the requests is analyzed whole. A
// trace that cannot be read is left out here; its analysis says why.
analyzer::AnalysisScope scope_for(const std::vector<std::string>& paths, const analyzer::AnalysisScope& given) {
  analyzer::AnalysisScope scope = given;
  if (scope.requests.empty() || paths.size() < 2) return scope;
  scope.tenants = analyzer::read_gpu_tenants(paths);
  scope.requests_optional = true;
  return scope;
}

// Several traces with --requests, none of which has such a request: the
// one-trace error, for all of them.
bool no_trace_has_requests(const analyzer::AnalysisScope& scope, size_t traces, size_t with_requests) {
  if (!scope.requests_optional || with_requests > 0) return false;
  print_error("--requests {}: none of the {} traces has {}", scope.requests, traces,
              scope.requests == analyzer::kProfilerApiRequests ? "a cudaProfilerStart or cuProfilerStart call"
                                                               : "an NVTX range with that message");
  return true;
}

// Every trace's samples, then one exposition (each family once).
int prometheus_command(const AnalyzeOptions& options, const analyzer::AnalysisScope& given) {
  int status = 0;
  std::vector<analyzer::PrometheusSample> samples;
  const std::vector<std::string> paths = expand_inputs(options.inputs);
  const analyzer::AnalysisScope scope = scope_for(paths, given);
  size_t with_requests = 0;
  for (const auto& path : paths) {
    const auto analysis = analyze_path(path, scope, true);
    if (analysis == nullptr || analysis->import_damage() != nullptr) status = 2;
    if (analysis == nullptr) continue;
    with_requests += analysis->analysis().requests.requested() ? 1 : 0;
    auto more = analyzer::prometheus_samples(analysis->report_input(options.top), options.job);
    samples.insert(samples.end(), more.begin(), more.end());
  }
  if (no_trace_has_requests(scope, paths.size(), with_requests)) return 2;
  const std::string text = analyzer::prometheus_text(samples);
  if (options.output.empty()) {
    fmt::print("{}", text);
  } else if (const std::string why = write_file_atomically(options.output, text); !why.empty()) {
    print_error("cannot write {}: {}", options.output, why);
    return 2;
  }
  return status;
}

// "no CUDA work in 3 processes: sh (pid 10), ls (pid 11), env (pid 12)".
std::string no_cuda_work_line(const std::vector<analyzer::ProcessEntry>& idle) {
  std::vector<std::string> names;
  for (const auto& p : idle) names.push_back(fmt::format("{} (pid {})", p.exe.substr(p.exe.rfind('/') + 1), p.pid));
  return fmt::format("no CUDA work in {} process(es): {}\n", idle.size(), fmt::join(names, ", "));
}

// Each trace's report in turn (text printed as it comes, JSON gathered into
// one document), then the process trees the traces form. Among several
// traces, those without CUDA work (shells, launchers, helpers) share one
// line instead of a report each.
int text_or_json_command(const AnalyzeOptions& options, const analyzer::AnalysisScope& given) {
  int status = 0;
  nlohmann::ordered_json all = nlohmann::ordered_json::array();
  std::vector<analyzer::ProcessEntry> processes, idle;
  const std::vector<std::string> paths = expand_inputs(options.inputs);
  const analyzer::AnalysisScope scope = scope_for(paths, given);
  size_t reports = 0, with_requests = 0;
  for (const auto& path : paths) {
    std::string failure;
    const auto analysis = analyze_path(path, scope, true, {}, &failure);
    if (analysis == nullptr || analysis->import_damage() != nullptr) status = 2;
    if (analysis == nullptr && options.json && paths.size() == 1)
      all.push_back({{"schema_version", analyzer::kJsonSchemaVersion}, {"trace", path}, {"error", failure}});
    if (analysis == nullptr) continue;
    const analyzer::ReportInput in = analysis->report_input(options.top);
    with_requests += analysis->analysis().requests.requested() ? 1 : 0;
    processes.push_back(analyzer::process_entry(in));
    if (options.json) all.push_back(analyzer::json_report(in));
    else if (paths.size() > 1 && !processes.back().cuda_work) idle.push_back(processes.back());
    else fmt::print("{}{}", reports++ == 0 ? "" : "\n", analyzer::text_report(in));
  }
  if (!idle.empty()) fmt::print("{}{}", reports == 0 ? "" : "\n", no_cuda_work_line(idle));
  if (no_trace_has_requests(scope, paths.size(), with_requests)) status = 2;
  const auto trees = analyzer::build_process_trees(std::move(processes));
  if (options.json) {
    print_json(paths.size(), std::move(all), trees);
    return status;
  }
  // A tree section only where traces link up: a lone trace is its own report.
  for (const auto& tree : trees)
    if (tree.process_count() > 1) fmt::print("\n{}", analyzer::tree_text(tree));
  return status;
}

}  // namespace

int analyze_command(const AnalyzeOptions& given) {
  AnalyzeOptions options = given;
  if (options.format == "json") options.json = true;
  for (const auto& [used, what] : {std::pair{!options.job.empty(), "--job labels Prometheus samples"},
                                    std::pair{!options.output.empty(), "-o writes the Prometheus exposition"}})
    if (used && options.format != "prometheus") {
      print_error("{}: it needs --format prometheus (gpuscope help analyze)", what);
      return 2;
    }
  if (std::string error; !options.output.empty() && !claim_output_file(options.output, options.force, false, &error)) {
    print_error("{}", error);
    return 2;
  }
  analyzer::AnalysisScope scope;
  if (const auto error = analyzer::parse_scope(options.window, options.range, &scope)) {
    print_error("{}", error->message);
    return 2;
  }
  scope.requests = options.requests;
  scope.tail_quantile = options.tail_percentile / 100;
  if (options.format == "prometheus") return prometheus_command(options, scope);
  return text_or_json_command(options, scope);
}

void add_request_options(CLI::App* command, std::string* requests, double* tail_percentile, const std::string& what) {
  CLI::Option* name = command->add_option(
      "--requests", *requests,
      "Latency per request, a request being each NVTX range with this message (any domain), or with "
      "cudaProfilerApi each cudaProfilerStart->cudaProfilerStop window: " + what);
  command->add_option("--tail", *tail_percentile,
                      "With --requests: the percentile above which requests are the tail (default 95)")
      ->check(CLI::Range(50.0, 99.9))
      ->needs(name);
}

Subcommand add_analyze_command(CLI::App& app) {
  auto o = std::make_shared<AnalyzeOptions>();
  CLI::App* analyze =
      app.add_subcommand("analyze", "Explain why the traced workload is slow: verdict, evidence, call sites, fix");
  analyze->add_option("traces", o->inputs,
                      "Trace files or directories of traces (the traces of one run also as a process tree)")
      ->required();
  CLI::Option* json = analyze->add_flag("--json", o->json, "Print the analysis as JSON (docs/analysis.schema.json)");
  analyze->add_option("--format", o->format,
                      "text (default), json, or prometheus (text exposition for node_exporter's textfile collector)")
      ->check(CLI::IsMember({"text", "json", "prometheus"}))
      ->excludes(json);
  analyze->add_option("--job", o->job, "With --format prometheus: the value of a job label on every sample");
  CLI::Option* output = analyze->add_option(
      "-o,--output", o->output,
      "With --format prometheus: the file to write, whole or not at all (a temporary file renamed over it)");
  analyze->add_flag("-f,--force", o->force, "Replace an existing file at -o")->needs(output);
  analyze->add_option("--window", o->window,
                      "Analyze only START:END, seconds from the process start (either end may be left out)");
  analyze->add_option("--range", o->range,
                      "Analyze only the time inside NVTX ranges with this message (all of them, any domain)");
  add_request_options(analyze, &o->requests, &o->tail_percentile,
                      "quantiles, the slowest, and what the tail spends its extra time on; with several traces "
                      "(one run's directory, or runs given together) also the other processes on the same GPU");
  analyze->add_option("--top", o->top, "Findings and call sites to show (default 5)")->check(CLI::Range(1, 100));
  analyze->footer(
      "Exit status: 0 analyzed, 2 when an input is not a readable trace or has no range named by --range or "
      "--requests (with several traces and --requests: when none of them has such a request).");
  return {analyze, [o] { return analyze_command(*o); }};
}
}  // namespace gpuscope::cli
