// Exporters of one trace to formats other tools read: Chrome trace-event
// JSON (ui.perfetto.dev, chrome://tracing), Perfetto's protobuf trace
// (ui.perfetto.dev, trace_processor) and a CSV events table. All
// stream: each chunk's records are written as the reader delivers them,
// and memory is bounded by open state (threads, streams, open NVTX ranges,
// live allocations), never by the number of events. docs/export.md maps
// records to events and tracks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "output.h"
#include "trace_reader.h"
#include "trace_summary.h"

namespace gpuscope::exporter {

struct ExportOptions {
  // A summary of the whole trace (an earlier pass) to symbolize call sites
  // with; without it call sites are raw ("module+0xoffset").
  std::optional<reader::TraceSummary> symbols;
  // Threads for the JSON and protobuf exports: 0 (default) two where the
  // machine has two cores (the walk, and encoding on the other: output
  // byte for byte the same), 1 all on the calling thread. CSV uses one.
  unsigned threads = 0;
};

// What the export did, beyond the events themselves.
struct ExportStats {
  uint64_t records = 0;            // records read
  uint64_t events = 0;             // events (JSON), slices/instants/counter values (protobuf) or rows (CSV)
  uint64_t clamped = 0;            // spans shortened to keep their track nested
  uint64_t unplaced = 0;           // spans written as instants: they could not nest
  uint64_t extra_lanes = 0;        // device records moved to another lane of their stream
  uint64_t unmatched_records = 0;  // host copies/syncs/... whose API call was not found
  uint64_t unmatched_pops = 0;     // NVTX pops/ends with nothing open
  uint64_t unterminated = 0;       // NVTX ranges still open at the end of the trace
};

struct ExportResult {
  ExportStats stats;
  reader::TraceSummary summary;  // of what was read: problems, counts, end
};

// JSON Object Format: {"displayTimeUnit":"ns","traceEvents":[...],"metadata":{...}}.
ExportResult write_chrome_trace(reader::TraceReader& reader, Output& out, ExportOptions options = {});

// Perfetto's TracePacket stream (schemas/perfetto_trace.proto): the same
// tracks, slices, counters and flows as the JSON, a fraction of its size.
ExportResult write_perfetto_trace(reader::TraceReader& reader, Output& out, ExportOptions options = {});

// One row per record, a header first; RFC 4180 quoting.
ExportResult write_csv(reader::TraceReader& reader, Output& out, ExportOptions options = {});

}  // namespace gpuscope::exporter
