// CPU stack samples (HostSample, format 1.4) aggregated per stack and per
// thread, and what the analyzer makes of them once the stacks are
// symbolized (HostProfile): the hottest stacks and the kinds of host work
// their innermost frames are in. Memory grows with distinct stacks and
// threads, never with the number of samples.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "gpuscope_generated.h"

namespace gpuscope::analyzer {

// What the innermost frame of a sample was doing, from its function's name.
enum class HostCost : uint8_t {
  Program,    // the program's own code (or a library's we do not name)
  Memset,     // memset: zeroing or filling buffers
  Memcpy,     // memcpy / memmove: copying between host buffers
  Allocator,  // malloc, calloc, free, operator new/delete, mmap
  Unknown     // no symbol for the frame
};
inline constexpr size_t kHostCosts = 5;
const char* host_cost_name(HostCost cost);  // "memset", ...
// From a demangled function name ("__memset_avx2_unaligned_erms" -> Memset).
HostCost classify_host_function(const std::string& function);

struct HostStackShare {
  uint32_t stack_id = 0;
  uint64_t samples = 0;
  std::string leaf;  // the innermost frame's text, as the report prints frames
  HostCost cost = HostCost::Unknown;
};

// Filled once the stacks are symbolized (host_profile.h); empty before.
struct HostProfile {
  std::vector<HostStackShare> top;          // the stacks with most samples, most first
  std::array<uint64_t, kHostCosts> by_cost{};  // samples by the innermost frame's kind
  std::string hottest_function;             // the innermost function with most samples, over all stacks
  uint64_t hottest_samples = 0;
};

struct HostSampleStats {
  uint64_t samples = 0;
  std::unordered_map<uint32_t, uint64_t> by_stack;   // stack id -> samples
  std::unordered_map<uint32_t, uint64_t> by_thread;  // tid -> samples
  // The process's cumulative CPU and system time (CpuSample, tid 0): kernel
  // time, where page faults on fresh memory are spent, is not sampled (the
  // sampler sees user mode only).
  uint64_t process_cpu_first = UINT64_MAX, process_cpu_last = 0;
  uint64_t process_system_first = UINT64_MAX, process_system_last = 0;
  HostProfile profile;

  void add(const fb::HostSample& s);
  void add_process_cpu(const fb::CpuSample& s);
  // Of the process's CPU time, the share spent in the kernel; < 0 unknown.
  double system_share() const;
};

}  // namespace gpuscope::analyzer
