// Where a trace is written. The library names its own file from
// GPUSCOPE_OUTPUT with resolve_output_path (preload/lifecycle.cpp); the CLI
// plans `-o` with output_form before passing it down and names attach
// traces with attach_trace_path (analyzer/cli): one set of rules for the
// forms of the setting, the name pattern, and the names of a run's other
// processes, exec'd images and later attaches.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace gpuscope::protocol {

// What the name pattern expands to.
struct NameFields {
  int pid = 0;
  std::string host;
  std::string exe;
  uint64_t start_realtime_ns = 0;
  int rank = -1;  // %r; -1 when the launcher set no rank variable
};

// %p pid, %h host, %n executable, %t start time (UTC, 20251129T185600Z),
// %r rank ("norank" without one), %% '%'; anything else is kept as written.
std::string expand_name_pattern(std::string_view pattern, const NameFields& fields);

// The name of a process's trace when the setting names no file:
// gpuscope-%n-%p.gpuscope, or gpuscope-%n-rank%r-%p.gpuscope with a rank.
std::string default_trace_name(const NameFields& fields);

enum class OutputForm : uint8_t {
  Default,    // empty: the working directory
  Directory,  // ending in '/', or an existing directory
  Pattern,    // containing '%': expanded per process (it may name the file only)
  File,       // anything else
};
OutputForm output_form(const std::string& output);

// GPUSCOPE_OUTPUT for this process:
//  - Default: default_trace_name, in the working directory
//  - Directory: DIR/ and default_trace_name
//  - Pattern: the pattern expanded
//  - File: the file itself.
// A process other than the run's root (root_pid set and not ours) whose name
// has no %p writes NAME-<pid>.EXT instead, so a run's processes never collide.
// A name with %r is already unique per rank: a ranked process keeps it, unless
// a file is there already (a helper of the same rank), then it adds -<pid>.
std::string resolve_output_path(const std::string& output, int root_pid, const NameFields& fields);

// For an image that replaced a traced image of the same process by exec
// (`env env true`, pyenv's shims): `path` as resolve_output_path gave it if
// it is free, else NAME-exec2.EXT, NAME-exec3.EXT, ...: the first free one,
// so the k-th image of a process that would write NAME.EXT writes
// NAME-exec<k>.EXT. Only a regular file of this user counts as an earlier
// image's; anything else at a candidate is returned as it is, for the
// creation to refuse with the usual message.
std::string exec_successor_path(const std::string& path);

// An attach's trace in `dir`: the name `gpuscope run` gives the process
// (without its rank), then NAME-2.EXT, NAME-3.EXT, ... for later attaches:
// the first name nothing is at. "" when even the last candidate is taken.
std::string attach_trace_path(const std::string& dir, const std::string& exe, int pid);

// "dir/app.gpuscope" -> "dir/app<suffix>.gpuscope"; "dir/trace" -> "dir/trace<suffix>".
std::string with_suffix(const std::string& path, std::string_view suffix);

}  // namespace gpuscope::protocol
