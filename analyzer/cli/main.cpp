// gpuscope: the command line. One subcommand per cmd_*.cpp.
#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "capture_range.h"
#include "commands.h"
#include "container.h"
#include "control_protocol.h"
#include "environment.h"
#include "gpuscope_version.h"
#include "settings.h"

namespace {

void setup_logging() {
  auto logger = spdlog::stderr_logger_st("gpuscope");
  logger->set_pattern("gpuscope: %^%l%$: %v");
  spdlog::set_default_logger(logger);
}

// An option whose value the library reads in the same grammar
// (protocol/capture_range.h); given on the command line, it is not empty.
CLI::Validator grammar_check(bool (*accepts)(std::string_view), std::string_view grammar, const char* name) {
  return CLI::Validator(
      [accepts, expected = "expected " + std::string(grammar)](const std::string& v) {
        return !v.empty() && accepts(v) ? std::string() : expected;
      },
      name);
}

// The bounds the library reads `variable` with (protocol/settings.h), for
// the option that sets it.
CLI::Range library_range(const char* variable) {
  const gpuscope::protocol::Setting& s = *gpuscope::protocol::find_setting(variable);
  return CLI::Range(s.min, s.max);
}

// Seconds, up to the longest window the library takes (a year).
constexpr double kMaxWindowS = gpuscope::protocol::kMaxWindowMs / 1000.0;

std::string version_text() {
  return fmt::format("gpuscope {} (trace format {}.{})", GPUSCOPE_VERSION_STRING,
                     gpuscope::container::kFormatMajor, gpuscope::container::kFormatMinor);
}

}  // namespace

int main(int argc, char** argv) {
  setup_logging();
  CLI::App app{"gpuscope: find out why a GPU workload is slow.\n"
               "Wrap a program with `gpuscope run -- CMD`, then read its trace."};
  app.set_version_flag("--version", version_text());
  app.require_subcommand(1);

  gpuscope::cli::RunOptions run_options;
  CLI::App* run = app.add_subcommand("run", "Run a program under gpuscope and write its trace");
  run->add_option("-o,--output", run_options.output,
                  "Trace directory (ending in /), file, or file-name pattern (%p pid, %h host, %n program, "
                  "%t start time, %r rank); missing directories are made (mode 0700); "
                  "default: the current directory");
  run->add_flag("--force", run_options.force,
                "Replace an existing trace file named by -o (never one a running capture is writing)");
  run->add_flag("-q,--quiet", run_options.quiet, "Print nothing after the program ends");
  run->add_flag("--no-stacks", run_options.no_stacks, "Do not record call stacks of hooked calls");
  run->add_option("--stack-depth", run_options.stack_depth, "Frames per call stack (default 32)")
      ->check(library_range(gpuscope::protocol::env::kStackDepth));
  run->add_option("--cpu-sample-ms", run_options.cpu_sample_ms, "CPU-time sampling period, 0 = off (default 10)")
      ->check(library_range(gpuscope::protocol::env::kCpuSampleMs));
  run->add_option("--nvml-hz", run_options.nvml_hz, "GPU metric samples per second, 0 = off (default 20)")
      ->check(library_range(gpuscope::protocol::env::kNvmlHz));
  run->add_option("--delay", run_options.delay_s, "Record nothing for the first SECONDS")
      ->check(CLI::Range(0.0, kMaxWindowS));
  run->add_option("--duration", run_options.duration_s, "Record for SECONDS, then finalize the trace")
      ->check(CLI::Range(0.001, kMaxWindowS));
  run->add_option("--capture-range", run_options.capture_range,
                  "Record only between cudaProfilerStart and cudaProfilerStop (cudaProfilerApi), or while an "
                  "NVTX range with that message is open (nvtx:MESSAGE or nvtx:MESSAGE@DOMAIN)")
      ->check(grammar_check(gpuscope::protocol::is_capture_range, gpuscope::protocol::kCaptureRangeGrammar, "RANGE"));
  run->add_option("--capture-range-end", run_options.capture_range_end,
                  "After a capture range ends: stop (default; finalize the trace), repeat, or repeat:N")
      ->check(grammar_check(gpuscope::protocol::is_range_end, gpuscope::protocol::kRangeEndGrammar,
                            "stop|repeat|repeat:N"));
  run->add_flag("--standby", run_options.standby,
                "Load idle and write nothing until `gpuscope attach PID` asks for a trace");
  run->add_option("command", run_options.command, "Program and its arguments")->required();
  run->prefix_command();  // everything from the program name on belongs to the program
  run->footer("Example: gpuscope run -o traces/ -- python3 serve.py --port 8080");

  gpuscope::cli::AttachOptions attach_options;
  CLI::App* attach = app.add_subcommand("attach", "Trace a stretch of a process in standby (gpuscope run --standby)");
  attach->add_option("pid", attach_options.pid, "Process to attach to")->check(CLI::PositiveNumber);
  attach->add_option("--duration", attach_options.duration_s,
                     "Record for SECONDS, then finalize the trace (default: until gpuscope detach)")
      ->check(CLI::Range(0.001, gpuscope::control::kMaxDurationMs / 1000.0));
  attach->add_option("-o,--output", attach_options.output,
                     "Trace file, or directory for it (default: the current directory, named like run's traces)");
  attach->add_flag("--list", attach_options.list, "List this user's processes in standby and their state");
  attach->add_flag("-q,--quiet", attach_options.quiet, "Print nothing on success");
  attach->footer("Example: gpuscope attach 4242 --duration 10 -o /tmp/traces/");

  int detach_pid = 0;
  bool detach_quiet = false;
  CLI::App* detach = app.add_subcommand("detach", "End an attach: finalize its trace; the process runs on idle");
  detach->add_option("pid", detach_pid, "Process to detach from")->required()->check(CLI::PositiveNumber);
  detach->add_flag("-q,--quiet", detach_quiet, "Print nothing on success");

  std::string trace_path;
  CLI::App* info = app.add_subcommand("info", "Show what a trace holds and whether it is whole");
  info->add_option("trace", trace_path, "Trace file")->required();  // the reader says what is wrong with it

  gpuscope::cli::AnalyzeOptions analyze_options;
  CLI::App* analyze = app.add_subcommand("analyze", "Explain why the traced workload is slow: verdict, evidence, call sites, fix");
  analyze->add_option("traces", analyze_options.inputs,
                      "Trace files or directories of traces (the traces of one run also as a process tree)")
      ->required();
  analyze->add_flag("--json", analyze_options.json, "Print the analysis as JSON (docs/analysis.schema.json)");
  analyze->add_option("--format", analyze_options.format,
                      "text (default), json, or prometheus (text exposition for node_exporter's textfile collector)")
      ->check(CLI::IsMember({"text", "json", "prometheus"}));
  analyze->add_option("--job", analyze_options.job, "With --format prometheus: the value of a job label on every sample");
  analyze->add_option("--window", analyze_options.window,
                      "Analyze only START:END, seconds from the process start (either end may be left out)");
  analyze->add_option("--range", analyze_options.range,
                      "Analyze only the time inside NVTX ranges with this message (all of them, any domain)");
  analyze->add_option("--top", analyze_options.top, "Findings and call sites to show (default 5)")
      ->check(CLI::Range(1, 100));
  analyze->footer("Exit status: 0 analyzed, 2 when an input is not a readable trace or has no range named by --range.");

  gpuscope::cli::DiffOptions diff_options;
  CLI::App* diff = app.add_subcommand("diff", "Compare two runs of the same workload; gate regressions with --fail-on");
  diff->add_option("base", diff_options.base, "Trace of the baseline run")->required();
  diff->add_option("new", diff_options.next, "Trace of the run to judge")->required();
  diff->add_option("--fail-on", diff_options.fail_on,
                   "Comma-separated gates, e.g. \"wall>+5%,sync_share>+3pp,verdict-changed,driver-changed\" "
                   "(docs/diff.md)");
  diff->add_flag("--json", diff_options.json, "Print the comparison as JSON");
  diff->add_option("--top", diff_options.top, "Kernels and call sites to list (default 10)")->check(CLI::Range(1, 1000));
  diff->footer("Exit status: 0 no gate failed, 1 a gate failed, 2 an input is unreadable or a gate is malformed.");

  gpuscope::cli::ExportOptions export_options;
  CLI::App* export_cmd = app.add_subcommand("export", "Write a trace as a timeline (Perfetto / Chrome JSON) or a CSV table");
  export_cmd->add_option("trace", export_options.trace, "Trace file")->required();
  export_cmd->add_option("--format", export_options.format,
                         "perfetto or chrome: Chrome trace-event JSON (ui.perfetto.dev, chrome://tracing); "
                         "csv: one row per record (default perfetto)")
      ->check(CLI::IsMember({"perfetto", "chrome", "csv"}));
  export_cmd->add_option("-o,--output", export_options.output, "Output file, - for standard output (the default)");
  export_cmd->add_flag("!--no-symbols", export_options.symbols,
                       "Raw call sites (module+0xoffset): skips the symbolization pass");
  export_cmd->footer("Exit status: 0 written (a damaged trace is exported as far as it reads, with a warning), "
                     "2 when the input is not a readable trace or the output cannot be written.");

  gpuscope::cli::ReportOptions report_options;
  CLI::App* report = app.add_subcommand("report", "Write the analysis as one self-contained HTML page, with a timeline");
  report->add_option("traces", report_options.inputs, "Trace files or directories of traces (a section each)")
      ->required();
  report->add_option("-o,--output", report_options.output, "The HTML file to write")->required();
  report->add_option("--top", report_options.top, "Findings to show (default 10)")->check(CLI::Range(1, 100));
  report->footer("Example: gpuscope report traces/ -o report.html\n"
                 "Exit status: 0 written, 2 when an input is not a readable trace (the others are still in the page).");

  std::string help_topic;
  CLI::App* help = app.add_subcommand("help", "Show help for a command");
  help->add_option("command", help_topic, "Command to explain");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }

  if (*run) return gpuscope::cli::run_command(run_options);
  if (*info) return gpuscope::cli::info_command(trace_path);
  if (*attach) return gpuscope::cli::attach_command(attach_options);
  if (*detach) return gpuscope::cli::detach_command(detach_pid, detach_quiet);
  if (*analyze) return gpuscope::cli::analyze_command(analyze_options);
  if (*diff) return gpuscope::cli::diff_command(diff_options);
  if (*export_cmd) return gpuscope::cli::export_command(export_options);
  if (*report) return gpuscope::cli::report_command(report_options);
  if (*help) {
    if (help_topic.empty()) {
      std::cout << app.help();
      return 0;
    }
    try {
      std::cout << app.get_subcommand(help_topic)->help();
      return 0;
    } catch (const CLI::OptionNotFound&) {
      spdlog::error("no command named '{}' (try: gpuscope help)", help_topic);
      return 2;
    }
  }
  return 2;
}
