// gpuscope doctor: the node conformance check (docs/doctor.md). The checks
// live in analyzer/doctor/; this only declares the options and prints.
#include <cstdio>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands.h"
#include "doctor.h"
#include "messages.h"
#include "output_paths.h"

namespace gpuscope::cli {
namespace {

struct DoctorCommandOptions {
  bool verbose = false;
  bool json = false;
  std::string format = "text";
  std::string output;  // -o: the file to write whole, instead of standard output
  bool force = false;
  doctor::DoctorOptions checks;
};

std::string render(const DoctorCommandOptions& o, const doctor::DoctorReport& report) {
  const std::string format = o.json ? "json" : o.format;
  if (format == "json") return doctor::render_json(report);
  if (format == "prometheus") return doctor::render_prometheus(report);
  return doctor::render_text(report, o.verbose);
}

int doctor_command(DoctorCommandOptions o) {
  std::string error;
  if (!o.output.empty() && !claim_output_file(o.output, o.force, false, &error)) {
    print_error("{}", error);
    return 2;
  }
  if (!o.checks.baseline_file.empty()) {
    doctor::NodeFacts baseline;
    if (!doctor::load_baseline(o.checks.baseline_file, &baseline, &error)) {
      print_error("{}", error);
      return 2;
    }
    o.checks.baseline = std::move(baseline);
  }
  const doctor::DoctorReport report = doctor::run_doctor(o.checks);
  const std::string text = render(o, report);
  if (o.output.empty()) {
    fmt::print("{}", text);
    std::fflush(stdout);
  } else if (const std::string why = write_file_atomically(o.output, text); !why.empty()) {
    print_error("cannot write {}: {}", o.output, why);
    return 2;
  }
  return doctor::exit_status(report);
}

}  // namespace

Subcommand add_doctor_command(CLI::App& app) {
  auto o = std::make_shared<DoctorCommandOptions>();
  CLI::App* doctor = app.add_subcommand(
      "doctor", "Check this node before a workload is blamed: driver, devices, CUDA runtime, PCIe link, clocks, "
                "power, ECC, MIG, other tenants, NUMA topology, the kernel log (Xid, AER), host CPU and I/O pressure "
                "(exit 0 all passed, 1 a check failed, 3 warnings only)");
  doctor->add_flag("-v,--verbose", o->verbose, "Show each check's evidence, fix and threshold");
  CLI::Option* json = doctor->add_flag("--json", o->json, "Print the results as JSON (docs/doctor.schema.json)");
  doctor->add_option("--format", o->format, "text (default), json, or prometheus (one gauge per check state)")
      ->check(CLI::IsMember({"text", "json", "prometheus"}))
      ->excludes(json);
  CLI::Option* output = doctor->add_option(
      "-o,--output", o->output,
      "Write the output to this file, whole or not at all (a temporary file renamed over it: node_exporter's "
      "textfile collector, or a baseline saved with --json)");
  doctor->add_flag("-f,--force", o->force, "Replace an existing file at -o")->needs(output);
  doctor->add_option("--baseline", o->checks.baseline_file,
                     "Compare this node with a known-good node's `gpuscope doctor --json` output (driver, CUDA, "
                     "kernel, GPU model, VBIOS, link, MIG, persistence, power limit, clocks)");
  doctor->add_flag("--canary", o->checks.canary,
                   "Also measure each GPU: pinned and pageable copy bandwidth both ways and an empty kernel's launch, "
                   "against what its PCIe link can carry (about a second per GPU; allocates 64 MiB on it)");
  doctor->add_option("--dev-dir", o->checks.dev_dir, "Where the NVIDIA device nodes are (default /dev)");
  doctor->add_option("--kernel-log", o->checks.kernel_log_file,
                     "Read this saved kernel log (dmesg, journalctl -k or /dev/kmsg text) instead of /dev/kmsg");
  doctor->add_option("--kmsg", o->checks.kmsg_path,
                     "Read the kernel's log records from this device instead of /dev/kmsg (when it cannot be read, "
                     "the systemd journal is: journalctl -k -b)");
  doctor->add_option("--proc-root", o->checks.proc_root,
                     "Read stat and pressure/{cpu,io} under this directory instead of /proc (a recorded snapshot: "
                     "stat.end, when there, is the second stat sample)");
  doctor->add_option("--clocksource-dir", o->checks.clocksource_dir,
                     "Read current_clocksource and available_clocksource here instead of "
                     "/sys/devices/system/clocksource/clocksource0 (a recorded snapshot: clock reads are then not "
                     "timed)");
  doctor->add_option("--pressure-window-ms", o->checks.pressure_window_ms,
                     "How long apart the two /proc/stat samples of host_pressure are (default 200)")
      ->check(CLI::Range(1u, 10000u));
  return {doctor, [o] { return doctor_command(*o); }};
}

}  // namespace gpuscope::cli
