// gpuscope info: what a trace file holds, and whether it is whole.
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "import.h"
#include "commands.h"
#include "messages.h"
#include "metrics.h"
#include "output_names.h"
#include "trace_summary.h"
#include "utc_time.h"

namespace gpuscope::cli {
namespace {

std::string cpu_list(const std::vector<uint16_t>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += j == i ? fmt::format("{}", cpus[i]) : fmt::format("{}-{}", cpus[i], cpus[j]);
    i = j + 1;
  }
  return out.empty() ? "?" : out;
}

// Where the process sits in its run's process tree (docs/trace-format.md).
std::string tree_position(const reader::ProcessInfo& p) {
  std::string out;
  if (p.trace_parent_pid == p.pid) out = "replaced a traced image of the same pid (exec)";
  else if (p.trace_parent_pid != 0) out = fmt::format("traced parent pid {}", p.trace_parent_pid);
  else out = "no traced parent";
  if (p.rank >= 0) {
    out += fmt::format(", rank {} (from {})", p.rank, p.rank_source);
    if (p.local_rank >= 0) out += fmt::format(", local rank {}", p.local_rank);
    if (p.world_size >= 0) out += fmt::format(", world size {}", p.world_size);
  }
  return out;
}

void print_process(const reader::ProcessInfo& p) {
  std::string command;
  for (const auto& a : p.argv) command += (command.empty() ? "" : " ") + a;
  fmt::print("process:     pid {} (parent {}), uid {}, {}\n", p.pid, p.ppid, p.uid, p.exe);
  fmt::print("command:     {}\n", command);
  fmt::print("host:        {}, Linux {}, {} CPUs online, affinity {}\n", p.hostname,
             p.kernel_release, p.online_cpus, cpu_list(p.cpu_affinity));
  fmt::print("started:     {} (monotonic {:.6f} s)\n",
             container::utc_time(p.start_realtime_ns, container::UtcStyle::Milliseconds), p.start_monotonic_ns / 1e9);
  fmt::print("gpuscope:    {}{}\n", p.gpuscope_version, p.run_id.empty() ? "" : ", run " + p.run_id);
  // Before format 2.2 the trace did not say; a hooked call costs about two of these reads more.
  if (!p.host_clock.empty()) fmt::print("host clock:  {} stamps the hooked calls\n", p.host_clock);
  if (p.trace_parent_pid != 0 || p.rank >= 0) fmt::print("tree:        {}\n", tree_position(p));
  if (p.environment.empty()) {
    fmt::print("environment: (none of the recorded variables set)\n");
    return;
  }
  bool first = true;
  for (const auto& [k, v] : p.environment) {
    fmt::print("{}{}={}\n", first ? "environment: " : "             ", k, v);
    first = false;
  }
}

// "/dev/nvidiactl rw": what the process could open, as it found it at start.
std::string node_text(const container::DeviceNodeState& n) {
  const std::string name = n.path.substr(n.path.rfind('/') + 1);
  if (!n.exists) return name + " missing";
  return name + " " + (n.readable ? "r" : "-") + (n.writable ? "w" : "-");
}

void print_probe(const container::EnvironmentProbeData& p) {
  if (p.driver_loaded && p.driver_version >= 0)
    fmt::print("driver:      libcuda.so.1 loads, CUDA {}.{} ({})\n", p.driver_version / 1000,
               p.driver_version % 1000 / 10, p.driver_version);
  else if (p.driver_loaded)
    fmt::print("driver:      libcuda.so.1 loads, version unknown: {}\n", p.driver_error);
  else
    fmt::print("driver:      libcuda.so.1 NOT LOADABLE: {}\n", p.driver_error);
  fmt::print("nvml:        {}{}{}\n", p.nvml_status,
             p.nvml_driver_version.empty() ? "" : ", driver " + p.nvml_driver_version,
             p.visible_devices < 0 ? "" : fmt::format(", {} device(s)", p.visible_devices));
  std::string nodes;
  for (const auto& n : p.device_nodes) nodes += (nodes.empty() ? "" : ", ") + node_text(n);
  fmt::print("dev nodes:   {}\n", nodes.empty() ? "(none)" : nodes);
}

std::string tri_state(int value, const char* on, const char* off) {
  return value < 0 ? "unknown" : value != 0 ? on : off;
}

// "400 W (default 700 W)", "700 W", or "?" when NVML did not say.
std::string power_limit_text(const container::DeviceDescription& d) {
  if (d.power_limit_mw == 0) return "?";
  std::string text = fmt::format("{} W", d.power_limit_mw / 1000);
  if (d.power_default_limit_mw != 0 && d.power_default_limit_mw != d.power_limit_mw)
    text += fmt::format(" (default {} W)", d.power_default_limit_mw / 1000);
  return text;
}

void print_device(const container::DeviceDescription& d) {
  fmt::print("gpu {}:       {}, {:.1f} GiB, PCIe Gen{} x{} (max Gen{} x{}), bus {}\n", d.index,
             d.name.empty() ? "(unnamed)" : d.name, d.memory_total_bytes / 1073741824.0, d.pcie_gen_current,
             d.pcie_width_current, d.pcie_gen_max, d.pcie_width_max, d.pci_bus_id.empty() ? "?" : d.pci_bus_id);
  fmt::print("             {}, NUMA node {}, CPUs {}, MIG {}, ECC {} ({} corrected, {} uncorrected)\n",
             d.uuid.empty() ? "no UUID" : d.uuid, d.numa_node < 0 ? "?" : std::to_string(d.numa_node),
             d.local_cpus.empty() ? "?" : d.local_cpus, tri_state(d.mig_mode, "on", "off"),
             tri_state(d.ecc_mode, "on", "off"), d.ecc_corrected, d.ecc_uncorrected);
  fmt::print("             VBIOS {}, persistence mode {}, power limit {}\n", d.vbios.empty() ? "?" : d.vbios,
             tri_state(d.persistence_mode, "on", "off"), power_limit_text(d));
  if (!d.mig_devices.empty()) fmt::print("             MIG devices: {}\n", d.mig_devices);
  if (d.nvlinks != 0) fmt::print("             NVLinks: {} of {} up\n", d.nvlinks_active, d.nvlinks);
  if (!d.unsupported.empty()) {
    std::string names;
    for (const auto& u : d.unsupported) names += (names.empty() ? "" : ", ") + u;
    fmt::print("             not supported: {}\n", names);
  }
}

std::string load_line(const container::LibraryLoadEvent& l) {
  const char* what = l.unload ? (l.ok ? "unloaded" : "UNLOAD FAILED") : (l.ok ? "loaded" : "LOAD FAILED");
  std::string detail = !l.ok ? (l.error.empty() ? "(dlerror text not captured)" : l.error)
                       : l.resolved_path.empty() || l.resolved_path == l.path ? ""
                                                                              : "-> " + l.resolved_path;
  if (l.deepbind_stripped) detail += (detail.empty() ? "" : " ") + std::string("(RTLD_DEEPBIND removed)");
  return fmt::format("{} {}{}{}", what, l.path, detail.empty() ? "" : l.ok ? " " : ": ", detail);
}

// Runtimes open libcuda.so.1 more than once (a probe, then the real open): a repeat of the line before is
// folded into it with a count, so the list shows distinct loads.
void print_loads(const std::vector<container::LibraryLoadEvent>& loads) {
  constexpr size_t kShown = 20;
  std::vector<std::pair<std::string, size_t>> lines;
  for (const auto& l : loads) {
    std::string line = load_line(l);
    if (!lines.empty() && lines.back().first == line) ++lines.back().second;
    else lines.emplace_back(std::move(line), 1);
  }
  for (size_t i = 0; i < lines.size() && i < kShown; ++i) {
    const auto& [line, times] = lines[i];
    fmt::print("{}{}{}\n", i == 0 ? "gpu libs:    " : "             ", line,
               times > 1 ? fmt::format(" ({} times)", times) : "");
  }
  if (lines.size() > kShown) fmt::print("             ... {} more\n", lines.size() - kShown);
}

// Where an imported trace came from and what its source could not see.
void print_import_source(const container::ImportSourceData& im) {
  fmt::print("imported:    from {} ({}): {} events read, {} of kinds gpuscope has no record for, {} host calls "
             "without their device record, {} with unusable timestamps{}\n",
             im.path, im.producer.empty() ? im.format : im.producer, im.events, im.skipped, im.unjoined,
             im.out_of_range, im.mid_run ? "; recording began mid-run" : "");
  if (!im.complete) fmt::print("             the import stopped early: {}\n", im.damage);
  for (const auto& note : im.notes) fmt::print("             {}\n", note);
}

void print_gpu_stack(const reader::TraceSummary& s) {
  if (s.import_source) print_import_source(*s.import_source);
  if (s.probe) print_probe(*s.probe);
  for (const auto& d : s.devices) print_device(d);
  if (!s.loads.empty()) print_loads(s.loads);
}

// What CUDA graph launches ran, and what stream captures took (format 1.3).
void print_graphs(const reader::TraceSummary& s) {
  const auto& g = s.graphs;
  if (s.counts.graph_launches != 0) {
    std::string notes;
    if (g.unknown_launches != 0)
      notes += fmt::format("; {} of a graph not seen instantiated (contents unknown)", g.unknown_launches);
    if (g.conditional_launches != 0)
      notes += fmt::format("; {} with conditional nodes (their bodies not counted)", g.conditional_launches);
    fmt::print("graphs:      {} graph launches ran {} kernels, {} copies, {} memsets, {} other nodes "
               "(counted from the graphs' nodes){}\n",
               s.counts.graph_launches, g.kernels, g.copies, g.memsets, g.other_nodes, notes);
  }
  if (s.captured_calls != 0)
    fmt::print("captured:    {} calls enqueued work into a graph being captured (it runs with the graph's launches, "
               "not when called)\n",
               s.captured_calls);
}

void print_counts(const reader::TraceSummary& s) {
  const auto& c = s.counts;
  fmt::print("events:      {} total: {} API calls, {} copies, {} memsets, {} kernels, {} syncs, "
             "{} allocations, {} CPU samples, {} markers, {} GPU samples, {} graph launches, {} CPU stack samples, "
             "{} per-process GPU samples\n",
             c.total(), c.api_calls, c.copies, c.memsets, c.kernels, c.syncs, c.allocs,
             c.cpu_samples, c.markers, c.gpu_samples, c.graph_launches, c.host_samples, c.process_gpu_samples);
  if (s.counted_calls != 0)
    fmt::print("             + {} nested calls that succeeded (or answered \"not ready\"), counted rather than "
               "recorded\n",
               s.counted_calls);
  for (const auto& [name, n] : s.calls_by_function) fmt::print("             {:>10}  {}\n", n, name);
  if (s.coalesced_records != 0)
    fmt::print("polls:       {} \"not ready\" answers of event and stream queries in {} record{} (a run of polls "
               "of one query on one handle is one record; counted one by one above)\n",
               s.coalesced_polls, s.coalesced_records, s.coalesced_records == 1 ? "" : "s");
  print_graphs(s);
  const auto& d = c.device;
  const auto status = analyzer::device_collection_text(s);
  if (status || d.total() != 0)
    fmt::print("device:      {} kernels, {} copies, {} memsets, {} syncs, {} allocations from the device (CUPTI; "
               "included above); collection: {}\n",
               d.kernels, d.copies, d.memsets, d.syncs, d.allocs, status.value_or("not recorded"));
  bool first_result = true;
  for (const auto& [call, n] : s.nonzero_results) {
    fmt::print("{}{} returned {} ({}x)\n", first_result ? "non-zero:    " : "             ", call.first, call.second, n);
    first_result = false;
  }
  if (s.first_ns != 0)
    fmt::print("span:        {:.3f} s of recorded activity\n", (s.last_ns - s.first_ns) / 1e9);
  if (s.dropped_total() == 0) {
    fmt::print("dropped:     none\n");
    return;
  }
  std::string parts;
  for (size_t r = 0; r < s.drops.size(); ++r)
    if (s.drops[r] != 0)
      parts += fmt::format("{}{} ({})", parts.empty() ? "" : ", ", s.drops[r],
                           reader::drop_reason_text(static_cast<fb::DropReason>(r)));
  fmt::print("dropped:     {} events: {}\n", s.dropped_total(), parts);
}

void print_end(const reader::TraceSummary& s) {
  if (!s.end) {
    fmt::print("end:         TRUNCATED: no end-of-trace record (killed, crashed, or still running)\n");
    return;
  }
  const auto& e = s.end;
  fmt::print("end:         {}\n", reader::end_text(*e));
  if (s.process && e->end_monotonic_ns > s.process->start_monotonic_ns)
    fmt::print("duration:    {:.3f} s\n", (e->end_monotonic_ns - s.process->start_monotonic_ns) / 1e9);
  if (e->tick_rate_restarts != 0)
    fmt::print("clock:       the TSC's rate changed {} time{} during capture (a VM moved to another host?); "
               "call times were fitted again from each change\n",
               e->tick_rate_restarts, e->tick_rate_restarts == 1 ? "" : "s");
}

}  // namespace

int info_command(const std::string& path) {
  reader::TraceReader r;
  std::string error;
  if (!importer::open_trace(r, path, &error)) {
    print_error("{}", error);
    return 2;
  }
  const reader::TraceSummary s = reader::summarize(r);
  fmt::print("trace:       {} ({} bytes)\n", path, s.file.size);
  fmt::print("format:      {}.{}, {} frames read\n", s.file.format_major, s.file.format_minor,
             s.stats.frames_read);
  if (s.process) print_process(*s.process);
  else fmt::print("process:     unknown (the metadata frame is missing or damaged)\n");
  print_gpu_stack(s);
  print_counts(s);
  print_end(s);
  for (const auto& p : s.problems)
    if (p.kind != reader::ProblemKind::NoTotals)
      fmt::print("warning:     {}\n", reader::describe(p));
  std::fflush(stdout);
  if (!r.has_corruption()) return 0;
  for (const auto& p : s.problems)
    if (p.kind == reader::ProblemKind::CorruptFrame) {
      print_error("{}: {}", path, reader::describe(p));
      break;
    }
  return 2;
}

Subcommand add_info_command(CLI::App& app) {
  auto trace = std::make_shared<std::string>();
  CLI::App* info = app.add_subcommand("info", "Show what a trace holds and whether it is whole");
  info->add_option("trace", *trace, "Trace file")->required();  // the reader says what is wrong with it
  return {info, [trace] { return info_command(*trace); }};
}
}  // namespace gpuscope::cli
