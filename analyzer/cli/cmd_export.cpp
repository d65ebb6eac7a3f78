// gpuscope export: a trace as Chrome trace-event JSON (ui.perfetto.dev,
// chrome://tracing), as Perfetto's protobuf trace (ui.perfetto.dev) or as
// a CSV events table. docs/export.md.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "import.h"
#include "call_sites.h"
#include "chrome_trace.h"
#include "commands.h"
#include "messages.h"
#include "output_paths.h"
#include "viewer_limits.h"

namespace gpuscope::cli {
namespace {

// The output file, written under a temporary name and renamed once whole,
// so a failed export never leaves a half file where a viewer would look.
class OutputFile {
 public:
  explicit OutputFile(const std::string& path) : path_(path), to_stdout_(path.empty() || path == "-") {
    if (to_stdout_) {
      file_ = stdout;
      return;
    }
    std::error_code ec;
    if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec)) {
      direct_ = true;  // a device or a pipe (/dev/null, a FIFO): nothing to rename
      file_ = std::fopen(path.c_str(), "wb");
      return;
    }
    temp_ = path + ".tmp";
    file_ = std::fopen(temp_.c_str(), "wbx");
    if (file_ == nullptr && errno == EEXIST) {
      std::filesystem::remove(temp_);  // left by an export that was killed
      file_ = std::fopen(temp_.c_str(), "wbx");
    }
  }
  ~OutputFile() {
    if (to_stdout_ || file_ == nullptr) return;
    std::fclose(file_);
    if (!direct_) std::remove(temp_.c_str());
  }
  std::FILE* get() const { return file_; }
  // Closes and renames; false (errno set) when that fails.
  bool commit() {
    if (to_stdout_) return std::fflush(stdout) == 0;
    const bool ok = std::fclose(file_) == 0;
    file_ = nullptr;
    if (direct_) return ok;
    if (!ok || std::rename(temp_.c_str(), path_.c_str()) != 0) {
      const int saved = errno;
      std::remove(temp_.c_str());
      errno = saved;
      return false;
    }
    return true;
  }
  const std::string& name() const { return to_stdout_ ? kStdout : path_; }

 private:
  inline static const std::string kStdout = "standard output";
  std::string path_, temp_;
  bool to_stdout_;
  bool direct_ = false;
  std::FILE* file_ = nullptr;
};

void report_damage(const std::string& path, const reader::TraceSummary& s) {
  warn_problems(path, s.problems);
  const bool truncated = std::any_of(s.problems.begin(), s.problems.end(), [](const reader::Problem& p) {
    return p.kind == reader::ProblemKind::Truncated || p.kind == reader::ProblemKind::CorruptFrame;
  });
  if (truncated)
    print_warning("{}: exported everything readable ({} frames); the damaged part is not in the export", path,
                  s.stats.frames_read);
  else if (!s.end)
    print_warning("{}: no end-of-trace record (killed, crashed or still running)", path);
}

// -o FILE: the overwrite rule of every output (output_paths.h); a device
// or a FIFO that is already there (/dev/null, a pipe to a viewer) is
// written as it is. No -o: standard output, unless it is a terminal (a
// trace's export is megabytes no one reads there); -o - insists.
bool may_write(const std::string& output, bool force, std::string* error) {
  std::error_code ec;
  if (output.empty() && isatty(STDOUT_FILENO)) {
    *error = "not writing the export to a terminal (give -o FILE, or -o - to print it anyway)";
    return false;
  }
  if (output.empty() || output == "-") return true;
  const auto status = std::filesystem::status(output, ec);
  if (std::filesystem::is_character_file(status) || std::filesystem::is_fifo(status)) return true;
  return claim_output_file(output, force, false, error);
}

void warn_if_too_large(const ExportOptions& options, uint64_t rows) {
  std::error_code ec;
  const uint64_t bytes = std::filesystem::file_size(options.output, ec);
  if (ec) return;  // a pipe or a device: the reader of it knows its limits
  if (const std::string why = exporter::too_large_for_viewer(options.format, bytes, rows); !why.empty())
    print_warning("{} is {}", options.output, why);
}

}  // namespace

int export_command(const ExportOptions& options) {
  reader::TraceReader r;
  std::string error;
  if (!may_write(options.output, options.force, &error) || !importer::open_trace(r, options.trace, &error)) {
    print_error("{}", error);
    return 2;
  }
  exporter::ExportOptions how;
  if (options.symbols) {
    reader::TraceSummary full = reader::summarize(r);  // a first pass; the export's own reads no damage again
    if (!full.stacks.empty()) how.symbols = std::move(full);
  }
  OutputFile out(options.output);
  if (out.get() == nullptr) {
    print_error("cannot write {}: {}", options.output, std::strerror(errno));
    return 2;
  }
  exporter::ExportResult result;
  bool write_failed = false;
  {
    exporter::Output sink(out.get());
    const auto write = options.format == "csv"        ? exporter::write_csv
                       : options.format == "perfetto" ? exporter::write_perfetto_trace
                                                      : exporter::write_chrome_trace;
    result = write(r, sink, std::move(how));
    write_failed = sink.failed();
  }
  if (write_failed || !out.commit()) {
    print_error("cannot write {}: {}", out.name(), std::strerror(errno));
    return 2;
  }
  report_damage(options.trace, result.summary);
  if (options.output.empty() || options.output == "-") return 0;
  warn_if_too_large(options, result.stats.events);
  fmt::print(stderr, "gpuscope: wrote {} {} from {} records to {}{}\n", result.stats.events,
             options.format == "csv" ? "rows" : "events", result.stats.records, options.output,
             options.format == "csv"        ? ""
             : options.format == "perfetto" ? " (open it in https://ui.perfetto.dev)"
                                            : " (open it in https://ui.perfetto.dev or chrome://tracing)");
  return 0;
}

Subcommand add_export_command(CLI::App& app) {
  auto o = std::make_shared<ExportOptions>();
  CLI::App* export_cmd =
      app.add_subcommand("export", "Write a trace as a timeline (Chrome JSON / Perfetto protobuf) or a CSV table");
  export_cmd->add_option("trace", o->trace, "Trace file")->required();
  export_cmd->add_option("--format", o->format,
                         "chrome: trace-event JSON (ui.perfetto.dev, chrome://tracing); perfetto: Perfetto's "
                         "protobuf trace, 2.5x smaller, for large traces (ui.perfetto.dev); "
                         "csv: one row per record (default chrome)")
      ->check(CLI::IsMember({"perfetto", "chrome", "csv"}));
  CLI::Option* output = export_cmd->add_option("-o,--output", o->output,
                         "Output file, - for standard output (the default, unless it is a terminal)");
  export_cmd->add_flag("-f,--force", o->force, "Replace an existing file at -o")->needs(output);
  export_cmd->add_flag("!--no-symbols", o->symbols, "Raw call sites (module+0xoffset): skips the symbolization pass");
  export_cmd->footer("Exit status: 0 written (a damaged trace is exported as far as it reads, with a warning), "
                     "2 when the input is not a readable trace or the output cannot be written.");
  return {export_cmd, [o] { return export_command(*o); }};
}
}  // namespace gpuscope::cli
