// The HTML report (`gpuscope report`): one self-contained page — no network,
// no external script or font — that opens offline and can be attached to a
// ticket. The C++ side gathers the data (the analysis, as the --json
// document has it, plus what happened over time) and embeds it as one JSON
// blob; the page's inline script draws it. The page itself is
// report/html/report_template.html, embedded at build time.
//
// What happened over time comes from a streaming pass over the trace made
// after a first analysis (pipeline.h rides it along the analysis' own
// second pass when it has one): the timeline is aggregated to screen
// resolution per lane (timeline_aggregate.h), GPU metrics and live device
// memory to a fixed number of points, so the page stays small whatever the
// trace's size.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "report.h"
#include "trace_reader.h"

namespace gpuscope::analyzer {

// Host threads and device streams drawn at most (the busiest threads first,
// streams in order of appearance); the page says how many were left out.
inline constexpr size_t kMaxThreadLanes = 24;
inline constexpr size_t kMaxStreamLanes = 16;
inline constexpr uint16_t kMaxNvtxDepthLanes = 4;  // nesting deeper than this shares the last lane
// Blocks per page section, all lanes together: each lane gets an equal share
// (at most kMaxBlocksPerLane), so the page stays near 10 MB even when every
// lane is full (~45 bytes of JSON per block).
inline constexpr size_t kMaxBlocksPerSection = 250000;
// Points per GPU-metric and memory series: buckets of equal time, averaged.
inline constexpr size_t kSeriesPoints = 2000;

// What happened over time in one trace (the timeline's lanes, GPU metrics,
// live device memory), gathered while its records go by. Its lanes are
// chosen from an analysis (the busiest threads, the feeding one first), so
// it is made from one and then fed a pass over the records; the model and
// metrics it was made from must outlive it.
class Timeline {
 public:
  Timeline(const TraceModel& model, const Metrics& metrics);
  ~Timeline();
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;
  void add(const reader::ChunkView& chunk);

 private:
  friend nlohmann::ordered_json html_section(const ReportInput& in, Timeline& timeline);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One trace's section of the page, from its analysis and its timeline, once
// the timeline has been fed every record.
nlohmann::ordered_json html_section(const ReportInput& in, Timeline& timeline);
// The same, the timeline fed by a pass of `reader`: the same trace, opened.
nlohmann::ordered_json html_section(const ReportInput& in, reader::TraceReader& reader);

// The whole page, with `sections` (an array of html_section()s) embedded.
std::string html_page(const nlohmann::ordered_json& sections, const std::string& title);

// JSON text that is safe inside <script type="application/json">: every '<'
// is written \u003c, so no string from the trace ("</script>", "<!--") can
// end or change the element, and JSON.parse reads it back unchanged.
// Invalid UTF-8 (a hostile kernel name) is replaced, never thrown on.
std::string script_safe_json(const nlohmann::ordered_json& j);

}  // namespace gpuscope::analyzer
