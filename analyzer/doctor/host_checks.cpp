// The host_pressure check: is the host's CPU saturated or its disk making
// tasks wait, which starves the threads that feed the GPUs as surely as a
// bad link does. Reads /proc (or --proc-root): pressure stall information
// (PSI) where the kernel has it, and two /proc/stat samples a short window
// apart.
#include <chrono>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "checks.h"

namespace gpuscope::doctor {
namespace {

// gpuscope's thresholds (docs/doctor.md, host_pressure): the share of the
// last 10 s in which at least one runnable task waited for a CPU, or for I/O.
constexpr double kPsiWarnPercent = 10, kPsiFailPercent = 50;
// Without PSI: all CPUs this busy over the window, or this share of CPU time
// idle waiting for I/O.
constexpr double kBusyWarnPercent = 95, kIowaitWarnPercent = 20;

// The aggregate "cpu" line of /proc/stat, in clock ticks.
struct CpuTimes {
  unsigned long long busy = 0, iowait = 0, total = 0;
  unsigned cpus = 0;  // "cpuN" lines
};

std::optional<CpuTimes> read_cpu_times(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::optional<CpuTimes> times;
  while (std::getline(in, line)) {
    if (line.compare(0, 4, "cpu ") == 0) {
      std::istringstream fields(line.substr(4));
      // user nice system idle iowait irq softirq steal (guest time is inside user)
      unsigned long long v[8] = {};
      for (unsigned long long& x : v) fields >> x;
      if (!fields && !fields.eof()) return std::nullopt;
      times = CpuTimes{};
      for (unsigned long long x : v) times->total += x;
      times->iowait = v[4];
      times->busy = times->total - v[3] - v[4];
    } else if (times && line.compare(0, 3, "cpu") == 0) {
      ++times->cpus;
    }
  }
  return times;
}

struct Psi {
  double some_avg10 = 0, full_avg10 = 0;
  std::string text;  // the file's lines, for the evidence
};

// /proc/pressure/{cpu,io}: "some avg10=1.23 avg60=... total=..." and "full ...".
std::optional<Psi> read_psi(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  Psi psi;
  bool some = false;
  for (std::string line; std::getline(in, line);) {
    const size_t at = line.find("avg10=");
    if (at == std::string::npos) continue;
    const double value = std::strtod(line.c_str() + at + 6, nullptr);
    if (line.compare(0, 5, "some ") == 0) psi.some_avg10 = value, some = true;
    if (line.compare(0, 5, "full ") == 0) psi.full_avg10 = value;
    psi.text += (psi.text.empty() ? "" : "; ") + line;
  }
  if (!some) return std::nullopt;
  return psi;
}

// The two samples of /proc/stat, `window` apart. A recorded snapshot (a
// test's, or one taken on another host) holds its second sample in
// stat.end, and nothing is waited for.
struct CpuWindow {
  double busy_percent = 0, iowait_percent = 0;
  unsigned cpus = 0;
  std::string window;  // "200 ms", or "the recorded window"
};

std::optional<CpuWindow> sample_cpu(const std::string& root, unsigned window_ms) {
  const std::optional<CpuTimes> first = read_cpu_times(root + "/stat");
  if (!first) return std::nullopt;
  const std::optional<CpuTimes> recorded = read_cpu_times(root + "/stat.end");
  if (!recorded) std::this_thread::sleep_for(std::chrono::milliseconds(window_ms));
  const std::optional<CpuTimes> second = recorded ? recorded : read_cpu_times(root + "/stat");
  if (!second || second->total <= first->total || second->busy < first->busy || second->iowait < first->iowait)
    return std::nullopt;
  const double ticks = static_cast<double>(second->total - first->total);
  return CpuWindow{100.0 * static_cast<double>(second->busy - first->busy) / ticks,
                   100.0 * static_cast<double>(second->iowait - first->iowait) / ticks, second->cpus,
                   recorded ? "the recorded window (stat, stat.end)" : fmt::format("{} ms", window_ms)};
}

Finding judge_psi(const char* resource, const Psi& psi, const char* fix) {
  const std::string what = fmt::format("tasks waited for {} {:.0f}% of the last 10 s (PSI some avg10)", resource,
                                       psi.some_avg10);
  if (psi.some_avg10 >= kPsiFailPercent) return failed(what, fix);
  if (psi.some_avg10 >= kPsiWarnPercent) return warned(what, fix);
  return passed(what);
}

constexpr const char* kCpuFix =
    "find what holds the CPUs (top, pidstat 1); move it off the GPU node or give the GPU feeders their own CPUs "
    "(cpuset, taskset)";
constexpr const char* kIoFix =
    "find what waits on the disk (iotop, pidstat -d 1): data loading from a slow or shared disk, swapping, "
    "checkpoints; stage data on local NVMe or cache it in memory";

// CPU saturation: PSI's answer where the kernel has it, else how busy the
// CPUs were over the window (busy is not waiting: that can only warn).
Finding judge_cpu(const std::optional<Psi>& psi, double busy_percent) {
  if (psi) return judge_psi("a CPU", *psi, kCpuFix);
  const std::string what = fmt::format("CPUs {:.0f}% busy over the window (no PSI on this kernel)", busy_percent);
  return busy_percent >= kBusyWarnPercent ? warned(what, kCpuFix) : passed(what);
}

Finding judge_io(const std::optional<Psi>& psi, double iowait_percent) {
  if (psi) return judge_psi("I/O", *psi, kIoFix);
  const std::string what = fmt::format("{:.0f}% of CPU time idle waiting for I/O over the window (no PSI on this "
                                       "kernel)",
                                       iowait_percent);
  return iowait_percent >= kIowaitWarnPercent ? warned(what, kIoFix) : passed(what);
}

}  // namespace

Finding check_host_pressure(const NodeProbe& probe) {
  const std::string& root = probe.options.proc_root;
  const std::optional<Psi> cpu_psi = read_psi(root + "/pressure/cpu"), io_psi = read_psi(root + "/pressure/io");
  const std::optional<CpuWindow> samples = sample_cpu(root, probe.options.pressure_window_ms);
  if (!samples && !cpu_psi && !io_psi)
    return not_checked(fmt::format("neither {0}/stat (two samples) nor {0}/pressure/cpu and io could be read", root));
  Finding cpu = samples || cpu_psi ? judge_cpu(cpu_psi, samples ? samples->busy_percent : 0) : not_checked("");
  Finding io = samples || io_psi ? judge_io(io_psi, samples ? samples->iowait_percent : 0) : not_checked("");
  const std::string summary = cpu.summary + (cpu.summary.empty() || io.summary.empty() ? "" : "; ") + io.summary;
  Finding f = worse(std::move(cpu), std::move(io));
  if (f.state == CheckState::NotChecked) f.state = CheckState::Pass;  // one side was judged and passed
  f.summary = summary;
  if (samples)
    f.evidence.push_back(fmt::format("{}/stat over {}: CPUs {:.1f}% busy, {:.1f}% iowait ({} CPUs)", root,
                                     samples->window, samples->busy_percent, samples->iowait_percent, samples->cpus));
  if (cpu_psi) f.evidence.push_back(fmt::format("{}/pressure/cpu: {}", root, cpu_psi->text));
  if (io_psi) f.evidence.push_back(fmt::format("{}/pressure/io: {}", root, io_psi->text));
  return f;
}

}  // namespace gpuscope::doctor
