// Fuzz target: arbitrary bytes as a trace file. The reader must neither
// crash nor read out of bounds nor allocate without limit; run under
// libFuzzer (clang, GPUSCOPE_FUZZ=ON) or replayed over a corpus by
// replay_main.cpp in the ordinary and sanitizer builds.
#include <cstddef>
#include <cstdint>
#include <span>

#include "trace_reader.h"
#include "trace_summary.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gpuscope::reader::TraceReader reader;
  std::string error;
  if (!reader.open(gpuscope::reader::memory_source(std::span(data, size)), "fuzz", &error)) return 0;
  const auto summary = gpuscope::reader::summarize(reader);
  // Touch what a report would touch.
  volatile uint64_t sink = summary.counts.total() + summary.dropped_total() + summary.strings.size();
  (void)sink;
  return 0;
}
