// The clocksource check: does reading the time stay in user space? Linux
// serves clock_gettime from the vDSO only with a clocksource the vDSO can
// read (the TSC, a hypervisor's TSC-based page, the ARM counter); with hpet,
// acpi_pm and the like every read is a system call. A kernel that found the
// TSC unstable switches to one of those on its own, and everything that
// stamps time often (frameworks' timers, NCCL, profilers, gpuscope's hooks)
// slows down with it.
#include <time.h>

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "checks.h"
#include "host_clock.h"

namespace gpuscope::doctor {
namespace {

// Clocksources the x86 and arm64 vDSOs read in user space.
constexpr std::array<const char*, 4> kUserSpaceClocks = {"tsc", "kvm-clock", "hyperv_clocksource_tsc_page",
                                                         "arch_sys_counter"};
// A clock read this slow (median) is a system call, whatever the name says;
// a vDSO read costs 15-50 ns, a system call several hundred.
constexpr double kSyscallReadNs = 300;

bool reads_in_user_space(const std::string& clocksource) {
  return std::find(kUserSpaceClocks.begin(), kUserSpaceClocks.end(), clocksource) != kUserSpaceClocks.end();
}

// The median cost of one CLOCK_MONOTONIC read here, over 15 rounds of 1000.
double measure_clock_read_ns() {
  std::vector<double> rounds;
  for (int round = 0; round < 15; ++round) {
    timespec start{}, end{}, scratch{};
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (int i = 0; i < 1000; ++i) clock_gettime(CLOCK_MONOTONIC, &scratch);
    clock_gettime(CLOCK_MONOTONIC, &end);
    rounds.push_back(((end.tv_sec - start.tv_sec) * 1e9 + static_cast<double>(end.tv_nsec - start.tv_nsec)) / 1000);
  }
  std::nth_element(rounds.begin(), rounds.begin() + rounds.size() / 2, rounds.end());
  return rounds[rounds.size() / 2];
}

std::string fix_for(const std::string& available) {
  const bool tsc_here = (" " + available + " ").find(" tsc ") != std::string::npos;
  return fmt::format("{}; look in the kernel log for \"clocksource: Marking clocksource 'tsc' as unstable\" (the "
                     "kernel gave the TSC up: a VM without an invariant TSC, or a firmware bug), and on a cloud VM "
                     "follow its provider's clock guidance",
                     tsc_here ? "switch to the TSC, which this kernel offers: echo tsc > "
                                "/sys/devices/system/clocksource/clocksource0/current_clocksource, and boot with "
                                "clocksource=tsc to keep it"
                              : "this kernel offers no TSC clocksource (available_clocksource)");
}

}  // namespace

Finding check_clocksource(const NodeProbe& probe) {
  const std::string& dir = probe.options.clocksource_dir;
  protocol::HostClockFacts facts = protocol::read_clocksource(dir.c_str());
  const std::string& current = facts.current_clocksource;
  const std::string& available = facts.available_clocksource;
  if (current.empty()) return not_checked(fmt::format("{}/current_clocksource could not be read", dir));
  const bool live = dir == protocol::kLiveClocksourceDir;
  facts.invariant_tsc = live && protocol::cpu_has_invariant_tsc();  // a fixture's CPU is not this one
  const double read_ns = live ? measure_clock_read_ns() : 0;
  Finding f;
  if (!reads_in_user_space(current)) {
    f = warned(fmt::format("clocksource {}: every clock read is a system call, not a vDSO read", current),
               fix_for(available));
  } else if (read_ns >= kSyscallReadNs) {
    f = warned(fmt::format("clocksource {}, yet a clock read costs {:.0f} ns: a system call, not a vDSO read", current,
                           read_ns),
               fix_for(available));
  } else {
    f = passed(fmt::format("clocksource {}: clock reads stay in user space (vDSO)", current));
  }
  f.evidence.push_back(fmt::format("{}/current_clocksource: {}; available: {}", dir, current,
                                   available.empty() ? "unreadable" : available));
  if (live) f.evidence.push_back(fmt::format("clock_gettime(CLOCK_MONOTONIC): {:.1f} ns a read (median of 15 x 1000)",
                                             read_ns));
  const protocol::HotClock hot = protocol::choose_hot_clock(facts);
  f.evidence.push_back(fmt::format("gpuscope's hooks stamp calls with {}{}", hot.description,
                                   hot.ticks ? "" : ": two clock_gettime reads per recorded call"));
  return f;
}

}  // namespace gpuscope::doctor
