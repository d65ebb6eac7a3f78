// Fuzz target: arbitrary bytes as a trace file, through the reader and the
// whole analysis (model, metrics, rules, text and JSON reports). Nothing may
// crash, read out of bounds or allocate without limit; run under libFuzzer
// (clang, GPUSCOPE_FUZZ=ON) or replayed over a corpus by replay_main.cpp in
// the ordinary and sanitizer builds. Symbolization is left out: it opens
// the files a trace names, which a fuzzer must not steer.
#include <cstddef>
#include <cstdint>
#include <span>

#include "metrics.h"
#include "report.h"
#include "rules.h"
#include "symbolizer.h"
#include "trace_model.h"
#include "trace_reader.h"

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
  return 0;
}
