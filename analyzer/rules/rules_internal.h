// Helpers shared by the rule files (rules.cpp: data movement, sync and
// memory; host_rules.cpp: CPU and launch; fallback_rules.cpp: CUDA that did
// not work; verdict.cpp: checks, verdict and coverage).
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "rules.h"
#include "units.h"

namespace gpuscope::analyzer {

inline double kind_share(const Metrics& x, CallKind k) { return x.feeder_share[static_cast<size_t>(k)]; }
inline Status share_status(double share, double fail, double warn) {
  return share >= fail ? Status::Fail : share >= warn ? Status::Warn : Status::Pass;
}

// cudaErrorMemoryAllocation and CUDA_ERROR_OUT_OF_MEMORY.
inline constexpr int kOutOfMemory = 2;
// What to do when the GPU ran out of memory (an allocation failed with
// cudaErrorMemoryAllocation / CUDA_ERROR_OUT_OF_MEMORY).
inline constexpr const char* kOutOfMemoryFix =
    "the GPU ran out of memory: lower the peak (smaller batches or shards, reuse buffers instead of allocating "
    "more, free cached memory before a large allocation), check with nvidia-smi that no other process holds the "
    "GPU's memory, or use a GPU with more memory";

// The call sites of the given kinds of call that cost the most host time.
std::vector<CallSite> top_sites(const TraceModel& m, std::initializer_list<CallKind> kinds, size_t n = 3);

// CPU-bound evidence from the CPU stack samples: the hottest host stacks and
// the host costs their innermost frames name (host_stacks.cpp). False when
// the trace has no samples.
bool cite_host_samples(const TraceModel& m, Finding* f);

std::vector<Finding> data_movement_findings(const TraceModel& m, const Metrics& x);
std::vector<Finding> host_findings(const TraceModel& m, const Metrics& x);
// "host CPU: the process used N cores on average; the feeding thread ...".
std::string cpu_evidence(const Metrics& x);
// fallback_rules.cpp: nothing reached the GPU and a CUDA call failed: CUDA
// unavailable (a silent CPU fallback, or a program that failed), or a
// working CUDA that refused the program's requests.
std::optional<Finding> fallback_finding(const TraceModel& m, const Metrics& x);
// ... and a process that did GPU work, then stopped at a CUDA error and
// exited non-zero.
std::optional<Finding> stopped_on_error_finding(const TraceModel& m, const Metrics& x);
// sync_rules.cpp: calls that synchronized without saying so.
std::optional<Finding> implicit_sync_finding(const TraceModel& m, const Metrics& x);

// Time in explicit synchronization that is a stall, not copies or a GPU
// working through work queued well ahead (rules.cpp).
double stalling_sync_share(const Metrics& x);
// shared_gpu_rules.cpp: other processes on the same GPU (the driver's
// per-process samples). Whether they hold it (kOtherProcessesShare of its
// busy time, the GPU busy by NVML), the part of the stalling synchronization
// put on them, whether launch calls blocked on a full queue (a busy GPU
// pushing back, whoever's work fills it), their finding, and the remedies
// for a shared GPU.
bool gpu_held_by_others(const Metrics& x);
double others_part_of_sync_share(const Metrics& x);
bool launches_pushed_back(const Metrics& x);
std::optional<Finding> shared_gpu_finding(const TraceModel& m, const Metrics& x);
std::string shared_gpu_remedies(const std::string& subject, const std::string& other);

}  // namespace gpuscope::analyzer
