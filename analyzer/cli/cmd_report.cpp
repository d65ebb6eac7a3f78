// gpuscope report: the analysis of one or more traces as one self-contained
// HTML page (a section per trace), for a browser or a ticket.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands.h"
#include "html_report.h"
#include "messages.h"
#include "output_paths.h"

namespace gpuscope::cli {

int report_command(const ReportOptions& options) {
  if (std::string error; !claim_output_file(options.output, options.force, false, &error)) {
    print_error("{}", error);
    return 2;
  }
  analyzer::AnalysisScope scope;
  scope.requests = options.requests;
  scope.tail_quantile = options.tail_percentile / 100;
  int status = 0;
  nlohmann::ordered_json sections = nlohmann::ordered_json::array();
  for (const auto& path : expand_inputs(options.inputs)) {
    // The timeline's lanes come from an analysis (the busiest threads, the
    // feeding one first): it reads the records after one.
    std::unique_ptr<analyzer::Timeline> timeline;
    const auto make_timeline = [&](const analyzer::TraceModel& model, const analyzer::Metrics& metrics) {
      timeline = std::make_unique<analyzer::Timeline>(model, metrics);
      return [t = timeline.get()](const reader::ChunkView& v) { t->add(v); };
    };
    const auto analysis = analyze_path(path, scope, true, make_timeline);
    if (analysis == nullptr || analysis->import_damage() != nullptr) status = 2;
    if (analysis == nullptr) continue;
    sections.push_back(analyzer::html_section(analysis->report_input(options.top), *timeline));
  }
  if (sections.empty()) {
    print_error("no report written: no input could be read as a trace");
    return 2;
  }
  const std::string title =
      sections.size() == 1 ? sections[0]["trace"].get<std::string>() : fmt::format("{} traces", sections.size());
  const std::string page = analyzer::html_page(sections, "gpuscope report: " + title);
  if (const std::string why = write_file_atomically(options.output, page); !why.empty()) {
    print_error("cannot write {}: {}", options.output, why);
    return 2;
  }
  fmt::print("gpuscope: report of {} trace(s) written to {} ({:.1f} KiB)\n", sections.size(), options.output,
             page.size() / 1024.0);
  return status;
}

Subcommand add_report_command(CLI::App& app) {
  auto o = std::make_shared<ReportOptions>();
  CLI::App* report =
      app.add_subcommand("report", "Write the analysis as one self-contained HTML page, with a timeline");
  report->add_option("traces", o->inputs, "Trace files or directories of traces (a section each)")->required();
  report->add_option("-o,--output", o->output, "The HTML file to write")->required();
  report->add_flag("-f,--force", o->force, "Replace an existing file at the output path");
  report->add_option("--top", o->top, "Findings to show (default 10)")->check(CLI::Range(1, 100));
  add_request_options(report, &o->requests, &o->tail_percentile,
                      "a Requests section with the quantiles, the latency histogram, the slowest requests (each a "
                      "link to its place on the timeline) and what the tail spends its time on");
  report->footer("Example: gpuscope report traces/ -o report.html\n"
                 "         gpuscope report serve.gpuscope --requests request -o serve.html\n"
                 "Exit status: 0 written, 2 when an input is not a readable trace or has no range named by --requests (the "
                 "others are still in the page).");
  return {report, [o] { return report_command(*o); }};
}
}  // namespace gpuscope::cli
