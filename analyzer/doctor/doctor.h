// gpuscope doctor: the node conformance check (docs/doctor.md). A table of
// named checks (check_table.cpp), each answering pass, warn, fail or "not
// checked: why" with its evidence, the fix and where its threshold comes
// from; run once against what the node's driver, NVML and CUDA runtime say.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "host_clock.h"
#include "node_facts.h"

namespace gpuscope::doctor {

// In order of severity, most severe first (the text output sorts by it).
enum class CheckState { Fail, Warn, NotChecked, Pass };
const char* state_name(CheckState state);  // "fail", "warn", "not_checked", "pass"

// What one check found.
struct Finding {
  CheckState state = CheckState::Pass;
  std::string summary;                 // one line
  std::vector<std::string> evidence;   // the values it judged
  std::string fix;                     // empty when there is nothing to do
};

// A check's finding for the node (gpu -1) or one GPU (its NVML index).
struct CheckResult {
  std::string check;
  int gpu = -1;
  std::string threshold;  // the rule the check applies
  std::string source;     // where that rule comes from
  Finding finding;
};

struct DoctorOptions {
  std::string nvml_library = "libnvidia-ml.so.1";
  // The CUDA runtime looked for on the library path, newest first.
  std::vector<std::string> cudart_libraries = {"libcudart.so.13", "libcudart.so.12", "libcudart.so"};
  std::string dev_dir = "/dev";  // where the device nodes are
  // A saved kernel log (dmesg, journalctl -k or /dev/kmsg text) read instead
  // of /dev/kmsg: another host's log, or a test's.
  std::string kernel_log_file;
  // The kernel's record stream, and the journal reader tried when it cannot
  // be read (looked up on PATH).
  std::string kmsg_path = "/dev/kmsg";
  std::string journalctl = "journalctl";
  // Where host_pressure reads stat and pressure/{cpu,io}, and how long apart
  // its two /proc/stat samples are.
  std::string proc_root = "/proc";
  unsigned pressure_window_ms = 200;
  // Where the clocksource check reads current_ and available_clocksource;
  // it times clock reads only in the live directory.
  std::string clocksource_dir = protocol::kLiveClocksourceDir;
  // A known-good node's facts (load_baseline): the baseline check compares
  // this node with them, and runs only when they are given.
  std::optional<NodeFacts> baseline;
  std::string baseline_file;  // where they came from, for the evidence
  // Run the canary check: copies and launches on each GPU (canary.h).
  bool canary = false;
};

struct DoctorReport {
  std::string host;
  // GPUs the driver names "(simulated)": simgpu, the project's test device
  // model. Said in every output so no one mistakes its figures for hardware.
  bool simulated = false;
  std::vector<CheckResult> results;  // table order; node checks, then per GPU
  NodeFacts facts;                   // the node's configuration (--json "facts")
};

// Runs every check. Never throws: a check that cannot run says why.
DoctorReport run_doctor(const DoctorOptions& options);

// 1 when a check failed, 3 when one warned and none failed, else 0
// (a check that could not run does not change the status).
int exit_status(const DoctorReport& report);

// The results most severe first, in table order within a severity.
std::vector<CheckResult> by_severity(const DoctorReport& report);

std::string render_text(const DoctorReport& report, bool verbose);
std::string render_json(const DoctorReport& report);  // docs/doctor.schema.json
std::string render_prometheus(const DoctorReport& report);

}  // namespace gpuscope::doctor
