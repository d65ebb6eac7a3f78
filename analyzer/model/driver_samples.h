// The driver's per-process utilization samples (NVML, trace format 1.8):
// how busy one sample says its process kept the GPU, and the names the
// driver gave the processes. One reading for the whole run's share of
// other processes (TraceModel::driver_busy_ns) and for the co-tenants of
// request tails (requests/driver_tenants.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>

#include "trace_reader.h"

namespace gpuscope::analyzer {

// SM time or memory traffic, whichever the process held more of: a
// memory-bound kernel holds the GPU with few SMs busy.
inline uint8_t driver_busy_pct(const fb::ProcessGpuSample& s) {
  return std::max(s.sm_util_pct(), s.memory_util_pct());
}

// The busy time one sample charges its process on its GPU (device -> pid
// -> ns, TraceModel::driver_busy_ns).
inline void add_driver_busy(const fb::ProcessGpuSample& s, std::map<uint16_t, std::map<uint32_t, double>>* busy_ns) {
  (*busy_ns)[s.device()][s.pid()] += driver_busy_pct(s) / 100.0 * static_cast<double>(s.window_ns());
}

// The chunk's process names (nvmlSystemGetProcessName), the first one seen
// for each pid kept.
inline void add_gpu_process_names(const reader::ChunkView& v, std::map<uint32_t, std::string>* names) {
  if (v.chunk == nullptr || v.chunk->gpu_processes() == nullptr) return;
  for (const fb::GpuProcess* p : *v.chunk->gpu_processes())
    if (p != nullptr && p->name() != nullptr && p->name()->size() > 0) names->try_emplace(p->pid(), p->name()->str());
}

}  // namespace gpuscope::analyzer
