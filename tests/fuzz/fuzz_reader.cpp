// Fuzz target: arbitrary bytes as a trace file, through the reader and the
// whole analysis (model, metrics, rules, text and JSON reports), then a
// second pass of the same reader, which must read the same. Nothing may
// crash, read out of bounds or allocate without limit; run under libFuzzer
// (clang, GPUSCOPE_FUZZ=ON) or replayed over a corpus by replay_main.cpp in
// the ordinary and sanitizer builds. Symbolization is left out: it opens
// the files a trace names, which a fuzzer must not steer.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include "metrics.h"
#include "report.h"
#include "rules.h"
#include "symbolizer.h"
#include "trace_model.h"
#include "trace_reader.h"

namespace {

bool same_reading(const gpuscope::reader::TraceSummary& a, const gpuscope::reader::TraceSummary& b) {
  const auto same_problem = [](const auto& x, const auto& y) {
    return x.kind == y.kind && x.offset == y.offset && x.message == y.message;
  };
  return a.counts.total() == b.counts.total() && a.stats.frames_read == b.stats.frames_read &&
         a.stats.frames_corrupt == b.stats.frames_corrupt && a.stats.bytes_skipped == b.stats.bytes_skipped &&
         a.stats.records_invalid == b.stats.records_invalid && a.stats.end_offset == b.stats.end_offset &&
         std::equal(a.problems.begin(), a.problems.end(), b.problems.begin(), b.problems.end(), same_problem);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuscope;
  reader::TraceReader reader;
  std::string error;
  if (!reader.open(reader::memory_source(std::span(data, size)), "fuzz", &error)) return 0;
  const analyzer::TraceModel model = analyzer::build_model(reader);
  const analyzer::Metrics metrics = analyzer::compute_metrics(model);
  const analyzer::Analysis analysis = analyzer::analyze(model, metrics);
  const reader::TraceSummary no_files;
  const analyzer::Symbolizer symbols(no_files);
  const analyzer::ReportInput in{"fuzz", model, metrics, analysis, symbols, 5};
  volatile size_t sink = analyzer::text_report(in).size() + analyzer::json_report(in).dump().size() +
                         model.summary.dropped_total();
  (void)sink;
  // A second pass through the same reader jumps over the damage the first
  // one found: it must come to exactly the same.
  const reader::TraceSummary again = reader::summarize(reader);
  if (!same_reading(model.summary, again)) __builtin_trap();
  return 0;
}
