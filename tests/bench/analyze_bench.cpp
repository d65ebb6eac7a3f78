// The analyzer on a large synthetic trace: events per second through
// reader -> model -> metrics -> rules, and peak memory per event.
//   analyze_bench write FILE EVENTS   build a trace of about EVENTS events
//   analyze_bench read FILE           analyze it, print the figures
// Two processes, so the writer's memory is not in the reader's peak.
// Figures: docs/performance.md (scripts/bench.sh runs it).
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "../support/sample_trace.h"
#include "metrics.h"
#include "rules.h"
#include "trace_model.h"

namespace {

using namespace gpuscope;

long peak_rss_kb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

int write_trace(const char* path, uint64_t events) {
  constexpr uint64_t kStepsPerFrame = 60'000;  // ~1.8 events per step
  const int frames = static_cast<int>(events / (kStepsPerFrame * 9 / 5) + 1);
  const test::SampleTrace t = test::make_sample_trace(frames, kStepsPerFrame);
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(t.bytes.data()),
                                              static_cast<std::streamsize>(t.bytes.size()));
  std::printf("wrote %s: %llu events, %zu bytes\n", path, static_cast<unsigned long long>(t.records), t.bytes.size());
  return 0;
}

int read_trace(const char* path) {
  const long base_kb = peak_rss_kb();
  reader::TraceReader r;
  std::string error;
  if (!r.open_file(path, &error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 2;
  }
  const auto t0 = std::chrono::steady_clock::now();
  const analyzer::TraceModel model = analyzer::build_model(r);
  const analyzer::Metrics metrics = analyzer::compute_metrics(model);
  const analyzer::Analysis analysis = analyzer::analyze(model, metrics);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const uint64_t events = model.summary.counts.total();
  const long grew_kb = peak_rss_kb() - base_kb;
  std::printf("analyzed %llu events in %.3f s: %.2f M events/s; peak memory +%ld KiB = %.2f bytes/event; verdict %s\n",
              static_cast<unsigned long long>(events), s, events / s / 1e6, grew_kb, grew_kb * 1024.0 / events,
              analyzer::bottleneck_label(analysis.verdict.cls));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::string(argv[1]) == "write") return write_trace(argv[2], std::strtoull(argv[3], nullptr, 10));
  if (argc == 3 && std::string(argv[1]) == "read") return read_trace(argv[2]);
  std::fprintf(stderr, "usage: analyze_bench write FILE EVENTS | read FILE\n");
  return 2;
}
