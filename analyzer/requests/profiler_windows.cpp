#include "profiler_windows.h"

#include <algorithm>

namespace gpuscope::analyzer {

void ProfilerWindows::add(const reader::ChunkView& v) {
  // Strings come in the chunk that first uses them, or before (string_table.h).
  if (v.chunk != nullptr && v.chunk->strings() != nullptr)
    for (const auto* s : *v.chunk->strings()) {
      if (s->text() == nullptr) continue;
      const std::string_view text = s->text()->string_view();
      if (text == "cudaProfilerStart" || text == "cuProfilerStart") edges_[s->id()] = Edge::Start;
      if (text == "cudaProfilerStop" || text == "cuProfilerStop") edges_[s->id()] = Edge::Stop;
    }
  if (edges_.empty()) return;
  for (const fb::ApiCall& c : v.api_calls) {
    if (c.depth() != 0) continue;  // cudaProfilerStart's own cuProfilerStart
    const auto it = edges_.find(c.function_id());
    if (it == edges_.end()) continue;
    // A window holds its start call and its stop call, as a capture window does.
    const uint64_t ns = it->second == Edge::Start ? c.start_ns() : c.start_ns() + c.duration_ns();
    events_.push_back(Event{ns, c.tid(), it->second});
  }
}

std::vector<RangeInstance> ProfilerWindows::finish(uint64_t trace_end_ns) {
  std::stable_sort(events_.begin(), events_.end(), [](const Event& a, const Event& b) { return a.ns < b.ns; });
  std::vector<RangeInstance> out;
  bool open = false;
  for (const Event& e : events_) {
    if (e.edge == Edge::Start && !open) {
      out.push_back(RangeInstance{e.ns, e.ns, 0, 0, e.tid, 0, true, false});
      open = true;
    } else if (e.edge == Edge::Stop && open) {
      out.back().end_ns = std::max(out.back().start_ns, e.ns);
      open = false;
    } else if (e.edge == Edge::Stop) {
      ++unmatched_stops_;
    }
  }
  if (open) {
    out.back().end_ns = std::max(out.back().start_ns, trace_end_ns);
    out.back().unterminated = true;
  }
  return out;
}

}  // namespace gpuscope::analyzer
