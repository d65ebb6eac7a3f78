// The gpuscope subcommands. main.cpp wires them to CLI11; each lives in its
// own cmd_*.cpp and returns the process exit code.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "trace_summary.h"

namespace gpuscope::analyzer {
struct ReportInput;
}

namespace gpuscope::cli {

struct RunOptions {
  std::string output;  // -o: directory, file or pattern
  bool force = false;  // replace an existing trace file named by -o
  bool quiet = false;
  bool no_stacks = false;
  int stack_depth = -1;      // -1: the library's default
  int cpu_sample_ms = -1;    // 0 = off
  int nvml_hz = -1;          // 0 = off
  double delay_s = 0;        // capture windows (preload/core/capture_window.h)
  double duration_s = 0;     // 0: to the end
  std::string capture_range;      // "" or cudaProfilerApi
  std::string capture_range_end;  // "" (stop), repeat, repeat:N
  std::vector<std::string> command;
};

// Runs the command under libgpuscope.so; returns its exit status (128+N when
// killed by signal N), 127/126 when it cannot be started, 2 on usage errors.
int run_command(const RunOptions& options);

// Prints what a trace holds; 0 when it read cleanly (a missing end record is
// only a warning), 2 when it is unreadable or damaged.
int info_command(const std::string& path);

struct AnalyzeOptions {
  std::vector<std::string> inputs;  // traces or directories of traces
  bool json = false;
  size_t top = 5;
  std::string window;  // START:END seconds from the process start
  std::string range;   // NVTX range message: analyze only the time inside such ranges
};

// Analyzes each trace and prints the report (or one JSON document); 0 when
// every input was analyzed, 2 when one could not be read as a trace.
int analyze_command(const AnalyzeOptions& options);

// The inputs with each directory replaced by the traces in it (sorted); a
// directory without traces stays, to be reported as unreadable.
std::vector<std::string> expand_inputs(const std::vector<std::string>& inputs);

// Analyzes one trace as `gpuscope analyze` does (window, range, top) and
// hands the result to `use`, valid only during the call; 0, or 2 with the
// reason printed. `warn`: print the trace's damage as warnings.
int with_analysis(const std::string& path, const AnalyzeOptions& options, bool warn,
                  const std::function<void(const analyzer::ReportInput&)>& use);

struct ReportOptions {
  std::vector<std::string> inputs;  // traces or directories of traces: a section each
  std::string output;               // the .html file to write
  size_t top = 10;
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
bool analyze_headline(const std::string& path, TraceHeadline* out);

// Where libgpuscope.so is, relative to this executable; empty + *error if not.
std::string locate_capture_library(std::string* error);

}  // namespace gpuscope::cli
