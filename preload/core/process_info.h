// What the trace says about the process it came from: collected once, at
// capture start, from /proc, uname and the environment.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace gpuscope::capture {

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
  std::string run_id;
  std::vector<uint16_t> cpu_affinity;
  uint32_t online_cpus = 0;
  std::vector<std::pair<std::string, std::string>> environment;
  std::string gpuscope_version;
  // Process trees (docs/trace-format.md, "Processes"):
  int trace_parent_pid = 0;  // GPUSCOPE_PARENT_PID as inherited; 0 none
  int rank = -1;             // -1: no rank variable set
  int local_rank = -1;
  int world_size = -1;
  std::string rank_source;   // the variable the rank came from
};

// Where a multi-worker launcher puts the rank: torchrun (RANK, LOCAL_RANK,
// WORLD_SIZE), Open MPI, MPICH/Hydra (PMI_*), PMIx, MVAPICH, Slurm. The first
// variable set to a number wins, in that order: torchrun inside a Slurm step
// sets RANK per worker while SLURM_PROCID names the step's task.
struct RankInfo {
  int rank = -1, local_rank = -1, world_size = -1;
  std::string source;
};
using EnvLookup = const char* (*)(const char*);
RankInfo rank_from_environment(EnvLookup lookup);

// Environment variables worth keeping in the trace: the ones that decide
// which GPU a process sees, which libraries it loads and how CUDA behaves.
bool is_recorded_environment_variable(std::string_view name);

ProcessMetadata collect_process_metadata();

// Base name of the running executable ("python3.11"), for output names.
std::string executable_name();

}  // namespace gpuscope::capture
