// `--requests cudaProfilerApi`: each cudaProfilerStart -> cudaProfilerStop
// window (or their driver twins, cuProfilerStart/cuProfilerStop) is one
// request, for programs that mark their unit of work with the profiler API
// rather than NVTX (the window a `--capture-range cudaProfilerApi` run
// records, or any run's calls). The profiler API is process-wide: a window
// opens at the first outermost start call (a start while open changes
// nothing, as in CUDA) and closes at the end of the next stop call, from
// any thread; the request's thread is the one that opened it. Collected on
// the model's first pass from the outermost calls, in time order at the end
// (threads' records interleave in any order).
#pragma once

#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "range_model.h"
#include "trace_reader.h"

namespace gpuscope::analyzer {

inline constexpr std::string_view kProfilerApiRequests = "cudaProfilerApi";

class ProfilerWindows {
 public:
  void add(const reader::ChunkView& v);
  // The windows as requests (RangeInstance, start_end set); one still open
  // at `trace_end_ns` is closed there and flagged unterminated.
  std::vector<RangeInstance> finish(uint64_t trace_end_ns);
  uint64_t unmatched_stops() const { return unmatched_stops_; }

 private:
  enum class Edge : uint8_t { Start, Stop };
  struct Event {
    uint64_t ns;
    uint32_t tid;
    Edge edge;
  };
  std::unordered_map<uint32_t, Edge> edges_;  // function name id -> what the call does
  std::vector<Event> events_;
  uint64_t unmatched_stops_ = 0;
};

}  // namespace gpuscope::analyzer
