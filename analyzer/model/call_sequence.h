// What the order of a process's outermost CUDA calls tells, beyond their
// sums: which call created the CUDA context (its time is initialization,
// not allocation or copying), and how long threads waited in
// synchronizations that followed queued GPU work (the host's view of GPU
// busy when the trace has no device timestamps and too few NVML samples),
// and whether the last failing call came after the last work that succeeded.
// Fed every outermost call in each thread's order; aggregates only.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "trace_summary.h"
#include <unordered_map>

#include "dense_id_map.h"
#include "node_cache.h"
#include "trace_model.h"

namespace gpuscope::analyzer {

// In a window opened mid-run, a first call at least this long created the
// context (context creation takes 0.1 s to seconds).
inline constexpr uint64_t kMidRunInitNs = 100'000'000;

// Calls that answer from the driver's tables without creating a context
// (device count, properties, attributes, versions, error strings).
bool is_query_without_context(std::string_view function);

class CallSequence {
 public:
  // One outermost call: its kind, thread, start, duration and call site
  // (whose function id `names` names).
  void add(const reader::TraceSummary& names, CallKind kind, uint32_t tid, uint64_t start_ns, uint64_t duration_ns,
           SiteKey site);
  // Its outcome: keeps the first and last failures and the last work that
  // succeeded (TraceModel::first_failure, last_failure, last_work_ns).
  void add_outcome(CallKind kind, uint64_t start_ns, uint32_t function_id, int32_t result);
  // Moves the context-creating call's time to Init and records what was
  // learnt in the model (context_init_*, waits_on_queued_*).
  void finish(TraceModel& m) const;

 private:
  struct FirstCall {
    uint64_t start_ns = UINT64_MAX, duration_ns = 0;
    uint32_t tid = 0;
    CallKind kind = CallKind::Other;
    SiteKey site;
  } first_;
  struct Traits {
    bool query = false;
  };
  DenseIdMap<Traits> traits_;  // by function id
  struct Queue {
    bool kernels = false, transfers = false;  // queued since the thread's last synchronization
    QueuedWaits waits;
  };
  std::optional<TraceModel::Failure> first_failure_, last_failure_;
  uint64_t last_work_ns_ = 0;
  std::unordered_map<uint32_t, Queue> queues_;  // by thread
  NodeCache<decltype(queues_), 64> queue_of_{queues_};
};

}  // namespace gpuscope::analyzer
