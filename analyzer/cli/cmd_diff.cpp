// gpuscope diff BASE NEW [--fail-on GATES] [--json]: what changed between
// two runs of the same workload, and a pass/fail for pipelines (canary: the
// same benchmark on the old and the new driver or image).
#include <filesystem>

#include <fmt/format.h>

#include "commands.h"
#include "diff_report.h"
#include "report.h"

namespace gpuscope::cli {
namespace {

// 0, or 2 with the reason printed.
int snapshot_trace(const std::string& path, analyzer::RunSnapshot* out) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    fmt::print(stderr, "gpuscope: diff: {} is a directory; name one trace file of each run\n", path);
    return 2;
  }
  return with_analysis(path, AnalyzeOptions{}, true, [&](const analyzer::ReportInput& in, reader::TraceReader&) {
    *out = analyzer::snapshot_of(in);
  });
}

}  // namespace

int diff_command(const DiffOptions& options) {
  std::vector<analyzer::Gate> gates;
  std::string error;
  if (!options.fail_on.empty() && !analyzer::parse_gates(options.fail_on, &gates, &error)) {
    fmt::print(stderr, "gpuscope: {}\n", error);
    return 2;
  }
  analyzer::RunSnapshot base, next;
  if (snapshot_trace(options.base, &base) != 0 || snapshot_trace(options.next, &next) != 0) return 2;
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

}  // namespace gpuscope::cli
