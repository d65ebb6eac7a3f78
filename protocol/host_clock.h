// How the preloaded library stamps the calls it records, decided once at
// session start, and said in the trace (ProcessMetadata.host_clock) and by
// `gpuscope doctor`'s clocksource check: both sides read the same facts
// through this one decision.
//
// rdtsc costs a few nanoseconds; clock_gettime through the vDSO 15-50 (more
// under a hypervisor's clock), and a recorded call takes two stamps. The TSC
// is used where it is a clock: the kernel keeps time with it (clocksource
// tsc), or the CPU says it is invariant (CPUID 0x80000007 EDX bit 8:
// constant rate, runs in every C-state) and the kernel still offers it as a
// clocksource while a hypervisor's clock keeps the time (kvm-clock, the
// default of many cloud VMs). A TSC the kernel found unstable (unsynchronized
// across CPUs, or jumping) leaves available_clocksource, so it is not used.
// Ticks become CLOCK_MONOTONIC nanoseconds in the writer, anchored at a
// fresh (ticks, ns) pair every drain (capture/clock.h, TickConverter).
#pragma once

#include <string>

namespace gpuscope::protocol {

struct HostClockFacts {
  std::string current_clocksource;    // e.g. "tsc", "kvm-clock"; empty: unreadable
  std::string available_clocksource;  // the kernel's list, space-separated
  bool invariant_tsc = false;
  bool monotonic_asked = false;  // GPUSCOPE_CLOCK=monotonic
};

struct HotClock {
  bool ticks = false;  // rdtsc, else clock_gettime(CLOCK_MONOTONIC)
  // "rdtsc (clocksource tsc)", "rdtsc (invariant TSC; clocksource kvm-clock)",
  // "clock_gettime (clocksource hpet)", "clock_gettime (GPUSCOPE_CLOCK=monotonic)"
  std::string description;
};

HotClock choose_hot_clock(const HostClockFacts& facts);

// The clocksource files of `dir` (the live one:
// /sys/devices/system/clocksource/clocksource0): the current one's name and
// the available list; the other facts are left as they are.
HostClockFacts read_clocksource(const char* dir);
// Each file alone: session start reads the list only off tsc, where the
// decision needs it.
std::string read_current_clocksource(const char* dir);
std::string read_available_clocksource(const char* dir);
// This CPU's invariant-TSC bit (false off x86-64).
bool cpu_has_invariant_tsc();

inline constexpr const char* kLiveClocksourceDir = "/sys/devices/system/clocksource/clocksource0";

}  // namespace gpuscope::protocol
