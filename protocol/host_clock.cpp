#include "host_clock.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "environment.h"
#include "small_file.h"

namespace gpuscope::protocol {
namespace {

std::string first_line(const std::string& path) {
  const std::string text = read_small_file(path.c_str(), 4096);
  const std::string line = text.substr(0, text.find('\n'));
  return line.substr(0, line.find_last_not_of(" \t") + 1);
}

bool offers_tsc(const std::string& available) { return (" " + available + " ").find(" tsc ") != std::string::npos; }

}  // namespace

std::string read_current_clocksource(const char* dir) {
  const std::string current = first_line(std::string(dir) + "/current_clocksource");
  return current.substr(0, current.find(' '));
}

std::string read_available_clocksource(const char* dir) { return first_line(std::string(dir) + "/available_clocksource"); }

HostClockFacts read_clocksource(const char* dir) {
  HostClockFacts facts;
  facts.current_clocksource = read_current_clocksource(dir);
  facts.available_clocksource = read_available_clocksource(dir);
  return facts;
}

bool cpu_has_invariant_tsc() {
#if defined(__x86_64__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_max(0x80000000u, nullptr) < 0x80000007u) return false;
  __cpuid(0x80000007u, eax, ebx, ecx, edx);
  return (edx & (1u << 8)) != 0;
#else
  return false;
#endif
}

HotClock choose_hot_clock(const HostClockFacts& f) {
  if (f.monotonic_asked)
    return {false, std::string("clock_gettime (") + env::kClock + "=" + env::kClockMonotonic + ")"};
  const std::string source = f.current_clocksource.empty() ? "unknown" : f.current_clocksource;
#if defined(__x86_64__)
  if (source == "tsc") return {true, "rdtsc (clocksource tsc)"};
  if (f.invariant_tsc && offers_tsc(f.available_clocksource))
    return {true, "rdtsc (invariant TSC; clocksource " + source + ")"};
#endif
  return {false, "clock_gettime (clocksource " + source + ")"};
}

}  // namespace gpuscope::protocol
