// Reads a whole trace into plain vectors, for tests to assert on.
#pragma once

#include <string>
#include <vector>

#include "record_checks.h"
#include "trace_reader.h"
#include "trace_summary.h"

namespace gpuscope::test {

// Every record of the trace (the reader's DecodedRecords, over all chunks).
struct TraceContents : reader::DecodedRecords {
  bool opened = false;
  std::string error;
  reader::TraceSummary summary;
};

inline TraceContents read_trace(reader::TraceReader& r) {
  TraceContents t;
  t.opened = true;
  // One pass for the records, one (through summarize) for the summary.
  r.read([&](const reader::ChunkView& v) {
    t.api_calls.insert(t.api_calls.end(), v.api_calls.begin(), v.api_calls.end());
    t.copies.insert(t.copies.end(), v.copies.begin(), v.copies.end());
    t.memsets.insert(t.memsets.end(), v.memsets.begin(), v.memsets.end());
    t.kernels.insert(t.kernels.end(), v.kernels.begin(), v.kernels.end());
    t.syncs.insert(t.syncs.end(), v.syncs.begin(), v.syncs.end());
    t.allocs.insert(t.allocs.end(), v.allocs.begin(), v.allocs.end());
    t.cpu_samples.insert(t.cpu_samples.end(), v.cpu_samples.begin(), v.cpu_samples.end());
    t.markers.insert(t.markers.end(), v.markers.begin(), v.markers.end());
    t.gpu_samples.insert(t.gpu_samples.end(), v.gpu_samples.begin(), v.gpu_samples.end());
    t.call_counts.insert(t.call_counts.end(), v.call_counts.begin(), v.call_counts.end());
    t.graph_launches.insert(t.graph_launches.end(), v.graph_launches.begin(), v.graph_launches.end());
    t.host_samples.insert(t.host_samples.end(), v.host_samples.begin(), v.host_samples.end());
  });
  return t;
}

// Opens `path` twice: once for the records, once for the summary.
inline TraceContents read_trace_file(const std::string& path) {
  TraceContents t;
  reader::TraceReader records;
  if (!records.open_file(path, &t.error)) return t;
  t = read_trace(records);
  reader::TraceReader summary;
  summary.open_file(path, &t.error);
  t.summary = reader::summarize(summary);
  return t;
}

}  // namespace gpuscope::test
