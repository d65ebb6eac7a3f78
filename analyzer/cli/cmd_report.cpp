// gpuscope report: the analysis of one or more traces as one self-contained
// HTML page (a section per trace), for a browser or a ticket.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "commands.h"
#include "html_report.h"

namespace gpuscope::cli {
namespace {

// Written next to the target and renamed over it, so an interrupted run
// never leaves half a page where a good report was. "" or why not.
std::string write_file(const std::string& path, const std::string& text) {
  const std::string tmp = fmt::format("{}.tmp.{}", path, getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return std::strerror(errno);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.close();
    if (!out) {
      const std::string why = std::strerror(errno);
      std::remove(tmp.c_str());
      return why;
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) std::remove(tmp.c_str());
  return ec ? ec.message() : "";
}

}  // namespace

int report_command(const ReportOptions& options) {
  int status = 0;
  nlohmann::ordered_json sections = nlohmann::ordered_json::array();
  AnalyzeOptions analyze;
  analyze.top = options.top;
  for (const auto& path : expand_inputs(options.inputs)) {
    const int rc = with_analysis(path, analyze, true, [&](const analyzer::ReportInput& in, reader::TraceReader& again) {
      sections.push_back(analyzer::html_section(in, again));  // the timeline reads the records again
    });
    if (rc != 0) status = rc;
  }
  if (sections.empty()) {
    fmt::print(stderr, "gpuscope: no report written: no input could be read as a trace\n");
    return 2;
  }
  const std::string title =
      sections.size() == 1 ? sections[0]["trace"].get<std::string>() : fmt::format("{} traces", sections.size());
  const std::string page = analyzer::html_page(sections, "gpuscope report: " + title);
  if (const std::string why = write_file(options.output, page); !why.empty()) {
    fmt::print(stderr, "gpuscope: cannot write {}: {}\n", options.output, why);
    return 2;
  }
  fmt::print("gpuscope: report of {} trace(s) written to {} ({:.1f} KiB)\n", sections.size(), options.output,
             page.size() / 1024.0);
  return status;
}

}  // namespace gpuscope::cli
