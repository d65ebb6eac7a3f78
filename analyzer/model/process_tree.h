// Process trees: the traces of one `gpuscope run` (one run id) linked into
// the tree of processes that wrote them, and which process holds the
// bottleneck. Each trace is analyzed on its own first; a ProcessEntry is
// what the tree needs of that analysis. docs/rules.md ("Process trees")
// states the linking and bottleneck rules and their blind spots.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpuscope::analyzer {

struct ProcessEntry {
  std::string trace_path;
  int pid = 0, ppid = 0;
  int trace_parent_pid = 0;  // nearest traced ancestor (GPUSCOPE_PARENT_PID); 0 unknown
  int rank = -1, local_rank = -1, world_size = -1;
  std::string run_id, host, boot_id;
  std::string exe;                 // base name
  uint64_t start_monotonic_ns = 0;
  double wall_s = 0;
  std::optional<double> gpu_busy;  // share of wall time
  std::string verdict_id;          // bottleneck_id(): pcie_bound, ..., healthy, inconclusive
  std::string verdict_label;       // bottleneck_label()
  double verdict_share = 0;
  std::string verdict_headline;
  bool cuda_work = false;  // made a CUDA call or loaded a GPU library
  bool complete = false;   // has an end record
  std::string end;         // "exit status 0", "no end record", ...
};

// Why a process is where it is in the tree.
enum class Link {
  Root,         // no traced parent: the run's root (or a trace from before format 1.1 with no traced parent)
  Parent,       // its traced parent's trace is here
  ExecOf,       // it replaced the image in `parent` (same pid, exec)
  MissingParent // its traced parent (trace_parent_pid) has no trace here: shown as a root
};

struct ProcessTree {
  std::string run_id;                 // empty: traces without a run id (one tree per host)
  std::vector<ProcessEntry> processes;  // by start time
  std::vector<int> parent;            // index into processes, -1 for roots
  std::vector<Link> link;
  // The bottleneck holder (docs/rules.md): the process whose verdict explains
  // the most seconds (verdict share x wall) among those with a bottleneck
  // verdict; -1 when none has one.
  int bottleneck = -1;
  double bottleneck_s = 0;
  double total_bottleneck_s = 0;  // the same, summed over the tree
  std::vector<std::string> notes;  // blind spots: missing parents, incomplete traces, ...

  std::vector<int> children(int index) const;  // by start time
  std::vector<int> roots() const;
  // Processes, not traces: an exec'd image and the windows of one attached
  // process are traces of the same pid. A tree is worth showing from 2 on.
  size_t process_count() const;
};

// Groups entries by run id (and by host for traces without one) and links
// each group into a tree. Trees are ordered by their first start time.
std::vector<ProcessTree> build_process_trees(std::vector<ProcessEntry> entries);

// Seconds the process's verdict explains; 0 for healthy and inconclusive.
double bottleneck_seconds(const ProcessEntry& e);

}  // namespace gpuscope::analyzer
