// What a trace says about the process it came from: the library fills it at
// capture start (capture/process_info.cpp) and writes it as the
// ProcessMetadata table (schemas/gpuscope.fbs); the reader gives it back
// (analyzer/reader/trace_summary.h). One struct for both ends.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace gpuscope::protocol {

struct ProcessMetadata {
  int pid = 0;
  int ppid = 0;
  uint32_t uid = 0;
  std::string exe;
  std::vector<std::string> argv;
  uint64_t start_monotonic_ns = 0;
  uint64_t start_realtime_ns = 0;
  std::string hostname;
  std::string kernel_release;
  std::string boot_id;
  std::string run_id;  // GPUSCOPE_RUN_ID
  std::vector<uint16_t> cpu_affinity;
  uint32_t online_cpus = 0;
  std::vector<std::pair<std::string, std::string>> environment;  // the variables worth keeping
  std::string gpuscope_version;
  // Process trees (docs/trace-format.md, "Processes"; format 1.1: a 1.0
  // trace reads as "not known"):
  int trace_parent_pid = 0;  // nearest traced ancestor (GPUSCOPE_PARENT_PID); 0 none; == pid: exec'd image
  int rank = -1;             // -1: no rank variable set
  int local_rank = -1;
  int world_size = -1;
  std::string rank_source;   // the variable the rank came from
  // How the hooks stamped calls (format 2.2; empty: not recorded): "rdtsc
  // (clocksource tsc)", or "clock_gettime (clocksource NAME)" where the TSC
  // is not the kernel's clock. A hooked call's cost depends on it.
  std::string host_clock;
};

}  // namespace gpuscope::protocol
