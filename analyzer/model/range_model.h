// NVTX ranges, paired from the trace's marker records (preload/nvtx/):
//  - push/pop per thread and domain, with nesting; a pop with nothing open
//    is counted as unmatched;
//  - start/end by range id, across threads; an end whose start is unknown
//    is counted as unmatched;
//  - a range still open at the end of the trace is closed there and
//    flagged unterminated (the process died or forgot to pop);
//  - closed ranges (MarkerKind::Range: start and duration, as imported
//    traces hold them) are taken as they are and nested by time.
// Records arrive per thread in order but threads interleave in any order,
// so events are collected first and paired at the end. Memory grows with
// range events, bounded by kMaxRangeEvents (the rest counted, not paired).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "trace_reader.h"

namespace gpuscope::analyzer {

inline constexpr size_t kMaxRangeEvents = size_t{1} << 21;

struct RangeInstance {
  uint64_t start_ns = 0, end_ns = 0;
  uint32_t name_id = 0, domain_id = 0;
  uint32_t tid = 0;          // the thread that opened it
  uint16_t depth = 0;        // push/pop: ranges open below it on its thread and domain
  bool start_end = false;    // nvtxRangeStart/End (may cross threads)
  bool unterminated = false;
};

struct RangeModel {
  std::vector<RangeInstance> ranges;  // by start time
  uint64_t marks = 0;
  uint64_t unmatched_pops = 0, unmatched_ends = 0, unterminated = 0;
  uint64_t events_over_limit = 0;
  // The last profiler step's start (gpu_breakdown.h: last_profiler_step_start),
  // found by the pass that paired the ranges, for the pass that reuses them.
  uint64_t last_profiler_step_ns = 0;
  bool empty() const { return ranges.empty(); }
};

class RangeBuilder {
 public:
  explicit RangeBuilder(size_t max_events = kMaxRangeEvents) : max_events_(max_events) {}
  void add(const fb::Marker& m);
  // Pairs what was collected; open ranges are closed at `trace_end_ns`.
  RangeModel finish(uint64_t trace_end_ns);

 private:
  struct Event {
    uint64_t ns;
    uint64_t range_id;
    uint32_t name_id, domain_id, tid;
    fb::MarkerKind kind;
  };
  void pair_push_pop(std::vector<Event>& events, uint64_t trace_end_ns, RangeModel* out);
  void pair_start_end(uint64_t trace_end_ns, RangeModel* out);
  void nest_closed(RangeModel* out);

  std::vector<Event> stack_events_;  // RangePush / RangePop
  std::vector<Event> starts_, ends_;
  std::vector<RangeInstance> closed_;  // MarkerKind::Range (imported traces)
  size_t max_events_;
  uint64_t marks_ = 0, over_limit_ = 0;
};

// Which range a host call at (tid, ns) ran in: the innermost push/pop range
// open on that thread, else the most recently started start/end range open
// at that time. Built once from a RangeModel; lookups are binary searches.
class RangeLocator {
 public:
  explicit RangeLocator(const RangeModel& model);
  // Index into model.ranges, or -1 outside every range.
  int64_t locate(uint32_t tid, uint64_t ns) const;

 private:
  using Segments = std::vector<std::pair<uint64_t, int64_t>>;  // (from, range index or -1)
  static Segments flatten(const std::vector<RangeInstance>& all, const std::vector<int64_t>& members);
  static int64_t find(const Segments& s, uint64_t ns);

  std::unordered_map<uint32_t, Segments> by_thread_;
  Segments process_wide_;
};

}  // namespace gpuscope::analyzer
