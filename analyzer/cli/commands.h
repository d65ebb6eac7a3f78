// The gpuscope subcommands. Each lives in its own cmd_*.cpp with the
// function that declares it and its options to CLI11 (add_*_command);
// main.cpp is the table of those. A command returns the exit code.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "pipeline.h"
#include "process_tree.h"
#include "trace_summary.h"

namespace CLI {
class App;
}

namespace gpuscope::cli {

// A subcommand declared on the parser, its options bound to values it
// owns, and what runs it once they are parsed.
struct Subcommand {
  CLI::App* app = nullptr;
  std::function<int()> run;
};
// --requests NAME and --tail P, as analyze, report and diff take them;
// `what` says what --requests adds to that command.
void add_request_options(CLI::App* command, std::string* requests, double* tail_percentile, const std::string& what);

Subcommand add_run_command(CLI::App& app);
Subcommand add_attach_command(CLI::App& app);
Subcommand add_detach_command(CLI::App& app);
Subcommand add_info_command(CLI::App& app);
Subcommand add_analyze_command(CLI::App& app);
Subcommand add_diff_command(CLI::App& app);
Subcommand add_export_command(CLI::App& app);
Subcommand add_report_command(CLI::App& app);
Subcommand add_import_command(CLI::App& app);
Subcommand add_doctor_command(CLI::App& app);

struct RunOptions {
  std::string output;  // -o: directory, file or pattern
  bool force = false;  // replace an existing trace file named by -o
  bool quiet = false;
  bool no_stacks = false;
  int stack_depth = -1;      // -1: the library's default
  int cpu_sample_ms = -1;    // 0 = off
  int nvml_hz = -1;          // 0 = off
  int cpu_sampling_hz = -1;  // 0 = off
  double delay_s = 0;        // capture windows (capture/capture_window.h)
  double duration_s = 0;     // 0: to the end
  std::string capture_range;      // "", cudaProfilerApi or nvtx:MESSAGE[@DOMAIN]
  std::string capture_range_end;  // "" (stop), repeat, repeat:N
  bool standby = false;           // load idle: `gpuscope attach` decides what is traced
  std::string device_activity;    // "" or all (default), kernels, off: GPUSCOPE_CUPTI_KINDS
  std::vector<std::string> command;
};

// Runs the command under libgpuscope.so; returns its exit status (128+N when
// killed by signal N), 127/126 when it cannot be started, 2 on usage errors.
int run_command(const RunOptions& options);

struct AttachOptions {
  int pid = 0;
  double duration_s = 0;  // 0: until `gpuscope detach`
  std::string output;     // file or directory; default: the current directory
  bool list = false;
  bool quiet = false;
};

// Starts a capture window in a process in standby; with a duration, waits
// for its end and prints the trace's summary. 0 when attached, 1 when the
// process refused (its one-line reason printed), 2 when it cannot be reached.
// --list: this user's processes in standby (stale sockets are removed).
int attach_command(const AttachOptions& options);

// Ends the capture window and prints the finalized trace's summary.
int detach_command(int pid, bool quiet);

// One trace's closing summary: what it holds and its verdict line (stderr).
void report_trace(const std::string& path);

// Prints what a trace holds; 0 when it read cleanly (a missing end record is
// only a warning), 2 when it is unreadable or damaged.
int info_command(const std::string& path);

struct AnalyzeOptions {
  std::vector<std::string> inputs;  // traces or directories of traces
  bool json = false;          // --json, the same as --format json
  std::string format = "text";  // text, json, prometheus
  std::string job;            // prometheus: the job label's value
  std::string output;         // prometheus: the file to write atomically ("": standard output)
  bool force = false;         // replace an existing file at output
  size_t top = 5;
  std::string window;  // START:END seconds from the process start
  std::string range;   // NVTX range message: analyze only the time inside such ranges
  std::string requests;  // NVTX range message of one request: latency quantiles and the tail's cause
  double tail_percentile = 95;  // --tail: requests above it are the tail
};

// Analyzes each trace and prints the report (or one JSON document); 0 when
// every input was analyzed, 2 when one could not be read as a trace.
int analyze_command(const AnalyzeOptions& options);

// One trace through the analysis pipeline (pipeline.h) with `scope` (and
// `following`, a pass that needs the analysis first); null when it cannot
// be analyzed, the reason printed (and put in *failure when given). With
// `warn`, the reader's problems (damage) are printed as warnings.
std::unique_ptr<analyzer::TraceAnalysis> analyze_path(const std::string& path, const analyzer::AnalysisScope& scope,
                                                      bool warn, const analyzer::FollowingPass& following = {},
                                                      std::string* failure = nullptr,
                                                      analyzer::Detail detail = analyzer::Detail::Full);

// The reader's problems as warnings on stderr, one line each ("gpuscope:
// warning: PATH: corrupt frame at offset N: why"); the missing end record
// is left to the caller, which says it in its own words.
void warn_problems(const std::string& path, const std::vector<reader::Problem>& problems);

struct DiffOptions {
  std::string base, next;  // traces (a directory is not accepted: which trace would it be?)
  std::string fail_on;     // gates; docs/diff.md
  bool json = false;
  size_t top = 10;
  std::string requests;         // NVTX range message of one request: latency quantiles as figures
  double tail_percentile = 95;  // --tail: requests above it are the tail
};

// Compares two runs; 0 when every gate passed (or none was given), 1 when a
// gate failed, 2 when an input is unreadable or a gate is malformed.
int diff_command(const DiffOptions& options);

struct ExportOptions {
  std::string trace;
  std::string format = "chrome";  // chrome (trace-event JSON) | perfetto (protobuf) | csv
  std::string output;               // "" or "-": standard output
  bool force = false;               // replace an existing file at output
  bool symbols = true;              // symbolize call sites (a first pass over the trace)
};

// Writes the trace as Chrome trace-event JSON or CSV; 0 when written (a
// damaged trace is exported as far as it reads, with a warning), 2 when the
// input is not a readable trace or the output cannot be written.
int export_command(const ExportOptions& options);

// The inputs with each directory replaced by the traces in it (sorted); a
// directory without traces stays, to be reported as unreadable.
std::vector<std::string> expand_inputs(const std::vector<std::string>& inputs);

struct ReportOptions {
  std::vector<std::string> inputs;  // traces or directories of traces: a section each
  std::string output;               // the .html file to write
  bool force = false;               // replace an existing file at output
  size_t top = 10;
  std::string requests;             // NVTX range message of one request: the latency section
  double tail_percentile = 95;      // --tail: requests above it are the tail
};

// Writes the HTML report of the inputs to options.output; 0 when every input
// was in it, 2 when one could not be read (the others are still written)
// or none could, or the file could not be written.
int report_command(const ReportOptions& options);

// `gpuscope run`'s closing summary of one trace, from a single analysis:
// what the trace holds and its verdict line. False (the reason printed)
// when it cannot be read.
struct TraceHeadline {
  reader::TraceSummary summary;
  std::string verdict;
};
bool analyze_headline(const std::string& path, TraceHeadline* out, analyzer::ProcessEntry* process = nullptr);
// The same from an analysis made with Detail::Verdict.
void headline_of(const analyzer::TraceAnalysis& analysis, TraceHeadline* out, analyzer::ProcessEntry* process);

// Where libgpuscope.so is, relative to this executable (or as
// GPUSCOPE_LIBRARY says); empty + *error if not.
std::string locate_capture_library(std::string* error);
// Where gpuscope's library `name` is: ../lib beside this executable.
std::string locate_own_library(const std::string& name, std::string* error);

}  // namespace gpuscope::cli
