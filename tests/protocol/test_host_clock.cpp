// The hooks' stamp: rdtsc where the TSC is a clock, clock_gettime elsewhere
// (protocol/host_clock.h), from the facts a node gives.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "host_clock.h"

namespace gpuscope::protocol {
namespace {

HostClockFacts facts(const char* current, const char* available, bool invariant) {
  HostClockFacts f;
  f.current_clocksource = current;
  f.available_clocksource = available;
  f.invariant_tsc = invariant;
  return f;
}

#if defined(__x86_64__)
TEST(HostClock, TheTscIsUsedWhereTheKernelKeepsTimeWithIt) {
  const HotClock c = choose_hot_clock(facts("tsc", "tsc hpet acpi_pm", false));
  EXPECT_TRUE(c.ticks);
  EXPECT_EQ(c.description, "rdtsc (clocksource tsc)");
}

TEST(HostClock, AnInvariantTscTheKernelStillOffersIsUsedUnderAHypervisorsClock) {
  const HotClock c = choose_hot_clock(facts("kvm-clock", "kvm-clock tsc acpi_pm", true));
  EXPECT_TRUE(c.ticks);
  EXPECT_EQ(c.description, "rdtsc (invariant TSC; clocksource kvm-clock)");
}
#endif

TEST(HostClock, ATscTheKernelDroppedOrThatIsNotInvariantIsNot) {
  // Found unstable: the kernel took tsc out of available_clocksource.
  HotClock c = choose_hot_clock(facts("kvm-clock", "kvm-clock acpi_pm", true));
  EXPECT_FALSE(c.ticks);
  EXPECT_EQ(c.description, "clock_gettime (clocksource kvm-clock)");
  c = choose_hot_clock(facts("kvm-clock", "kvm-clock tsc acpi_pm", false));  // rate changes with P-states
  EXPECT_FALSE(c.ticks);
  // "tsc" must be a word of the list, not part of one.
  EXPECT_FALSE(choose_hot_clock(facts("hpet", "hpet tsc_page", true)).ticks);
  EXPECT_EQ(choose_hot_clock(facts("", "", true)).description, "clock_gettime (clocksource unknown)");
}

TEST(HostClock, AskingForMonotonicWinsOverEveryTsc) {
  HostClockFacts f = facts("tsc", "tsc", true);
  f.monotonic_asked = true;
  const HotClock c = choose_hot_clock(f);
  EXPECT_FALSE(c.ticks);
  EXPECT_EQ(c.description, "clock_gettime (GPUSCOPE_CLOCK=monotonic)");
}

TEST(HostClock, TheClocksourceFilesAreReadAsTheKernelWritesThem) {
  const auto dir = std::filesystem::temp_directory_path() / ("gpuscope-clocksource-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "current_clocksource") << "kvm-clock\n";
  std::ofstream(dir / "available_clocksource") << "kvm-clock tsc acpi_pm \n";
  const HostClockFacts f = read_clocksource(dir.c_str());
  EXPECT_EQ(f.current_clocksource, "kvm-clock");
  EXPECT_EQ(f.available_clocksource, "kvm-clock tsc acpi_pm");
  EXPECT_FALSE(f.invariant_tsc) << "read from the CPU, not the files";
  std::filesystem::remove_all(dir);
  EXPECT_EQ(read_clocksource(dir.c_str()).current_clocksource, "");
}

}  // namespace
}  // namespace gpuscope::protocol
