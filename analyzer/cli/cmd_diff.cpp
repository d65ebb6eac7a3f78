// gpuscope diff BASE NEW [--fail-on GATES] [--requests NAME] [--json]: what changed between
// two runs of the same workload, and a pass/fail for pipelines (canary: the
// same benchmark on the old and the new driver or image).
#include <filesystem>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands.h"
#include "diff_report.h"
#include "messages.h"
#include "report.h"

namespace gpuscope::cli {
namespace {

// 0, or 2 with the reason printed.
int snapshot_trace(const std::string& path, const analyzer::AnalysisScope& scope, analyzer::RunSnapshot* out) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    print_error("{} is a directory: diff compares one trace file of each run (gpuscope help diff)", path);
    return 2;
  }
  const auto analysis = analyze_path(path, scope, true);
  if (analysis == nullptr || analysis->import_damage() != nullptr) return 2;  // a partial run compares falsely
  *out = analyzer::snapshot_of(analysis->report_input(AnalyzeOptions{}.top));
  return 0;
}

}  // namespace

int diff_command(const DiffOptions& options) {
  std::vector<analyzer::Gate> gates;
  std::string error;
  if (!options.fail_on.empty() && !analyzer::parse_gates(options.fail_on, &gates, &error)) {
    print_error("{}", error);
    return 2;
  }
  for (const analyzer::Gate& g : gates)
    if (options.requests.empty() && analyzer::gate_needs_requests(g)) {
      print_error("--fail-on: '{}' judges request latency: it needs --requests NAME (gpuscope help diff)", g.text);
      return 2;
    }
  analyzer::AnalysisScope scope;
  scope.requests = options.requests;
  scope.tail_quantile = options.tail_percentile / 100;
  analyzer::RunSnapshot base, next;
  if (snapshot_trace(options.base, scope, &base) != 0 || snapshot_trace(options.next, scope, &next) != 0) return 2;
  const auto results = analyzer::evaluate_gates(gates, base, next);
  const analyzer::DiffInput in{base, next, results, options.top};
  if (options.json)
    fmt::print("{}\n", analyzer::diff_json(in).dump(2));
  else
    fmt::print("{}", analyzer::diff_text(in));
  for (const auto& r : results)
    if (r.status == analyzer::GateResult::Status::Fail) return 1;
  return 0;
}

Subcommand add_diff_command(CLI::App& app) {
  auto o = std::make_shared<DiffOptions>();
  CLI::App* diff = app.add_subcommand("diff", "Compare two runs of the same workload; gate regressions with --fail-on");
  diff->add_option("base", o->base, "Trace of the baseline run")->required();
  diff->add_option("new", o->next, "Trace of the run to judge")->required();
  diff->add_option("--fail-on", o->fail_on,
                   "Comma-separated gates, e.g. \"wall>+5%,sync_share>+3pp,verdict-changed,driver-changed\" "
                   "(docs/diff.md)");
  diff->add_flag("--json", o->json, "Print the comparison as JSON");
  add_request_options(diff, &o->requests, &o->tail_percentile,
                      "p50 ... p99.9 and max_latency become figures and gates (p99>+10%), tail-cause-changed a gate");
  diff->add_option("--top", o->top, "Kernels and call sites to list (default 10)")->check(CLI::Range(1, 1000));
  diff->footer("Exit status: 0 no gate failed, 1 a gate failed, 2 an input is unreadable or a gate is malformed.");
  return {diff, [o] { return diff_command(*o); }};
}
}  // namespace gpuscope::cli
