// What the trace says about the process it came from: collected once, at
// capture start, from /proc, uname and the environment.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "process_metadata.h"

namespace gpuscope::capture {

// The struct both ends of a trace share (protocol/process_metadata.h).
using protocol::ProcessMetadata;

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

// The object that contains gpuscope's code (libgpuscope.so, or the test
// binary it is linked into), and its directory: the bundle ships the
// libraries gpuscope loads itself (libcupti, libunwind) next to it.
std::string own_library_path();
std::string own_directory();

// Base name of the running executable ("python3.11"), for output names.
std::string executable_name();

}  // namespace gpuscope::capture
