// The analyzer on a large synthetic trace: events per second through
// reader -> model -> metrics -> rules, and peak memory per event.
//   analyze_bench write FILE EVENTS   build a trace of about EVENTS events
//   analyze_bench read FILE           analyze it, print the figures
//   analyze_bench decode FILE 1|2     the reader alone (one thread, or
//     read ahead on a second), its visitor only summing each chunk's call and
//     kernel starts: what decoding costs without the model
//   analyze_bench write-sparse FILE EVENTS   the HTML report's worst case: 40
//     threads and 16 streams busy in 10 000 separate bursts, so no lane's
//     spans merge on their own and every lane hits the block cap
// Two processes, so the writer's memory is not in the reader's peak.
// Figures: docs/performance.md (scripts/bench.sh runs it).
#include <sys/resource.h>

#include <algorithm>
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

// `steps_per_frame`: 60 000 (~10 MB chunks) by default, the figures of
// docs/performance.md since issue 5; the capture writer's own chunks are
// ~384 KB (kChunkTargetBytes), about 2 400 steps.
int write_trace(const char* path, uint64_t events, uint64_t steps_per_frame = 60'000) {
  const uint64_t kStepsPerFrame = std::max<uint64_t>(1, steps_per_frame);  // ~1.8 events per step
  const int frames = static_cast<int>(events / (kStepsPerFrame * 9 / 5) + 1);
  const test::SampleTrace t = test::make_sample_trace(frames, kStepsPerFrame);
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(t.bytes.data()),
                                              static_cast<std::streamsize>(t.bytes.size()));
  std::printf("wrote %s: %llu events, %zu bytes\n", path, static_cast<unsigned long long>(t.records), t.bytes.size());
  return 0;
}

// Streams frames to the file: nothing held but one chunk.
int write_sparse_trace(const char* path, uint64_t events) {
  constexpr uint64_t kBursts = 10'000, kBurstEveryNs = 10'000'000, kStepNs = 4'000, kStepsPerFrame = 60'000;
  const uint64_t steps = events / 2, per_burst = std::max<uint64_t>(1, steps / kBursts);
  std::ofstream out(path, std::ios::binary);
  const auto header = capture::file_header_bytes();
  out.write(reinterpret_cast<const char*>(header.data()), static_cast<std::streamsize>(header.size()));
  capture::ChunkBuilder b;
  capture::FrameEncoder encoder(1);
  capture::ProcessMetadata m;
  m.pid = 4243;
  m.exe = "/opt/app/sparse";
  m.start_monotonic_ns = 1'000'000'000;
  b.set_metadata(m);
  std::vector<std::pair<uint32_t, std::string>> names = {{1, "cudaLaunchKernel"}};
  for (uint32_t id = 2; id <= 9; ++id) names.emplace_back(id, "kernel_" + std::to_string(id));
  b.add_strings(names);
  uint32_t frame = 0;
  for (uint64_t i = 0; i < steps; ++i) {
    const uint64_t j = i % per_burst;
    const uint64_t start = m.start_monotonic_ns + (i / per_burst) * kBurstEveryNs + j * kStepNs;
    b.add(fb::ApiCall(start, 2'000, i + 1, 0x100 + j % 16, 1000 + static_cast<uint32_t>(j % 40), 0, 0, 1, 0, 0, 0, 0));
    b.add(fb::Kernel(start + 500, 2'000, i + 1, 0x100 + j % 16, 2 + static_cast<uint32_t>(j % 8), 1, 1, 1, 1, 1, 1, 0, 0,
                     fb::Source::Host, 0, 0, 0));
    if ((i + 1) % kStepsPerFrame != 0 && i + 1 != steps) continue;
    if (i + 1 == steps) {
      capture::TotalsInfo totals;
      totals.end.kind = fb::EndKind::ReturnFromMain;
      totals.events_written = steps * 2;
      b.set_totals(totals);
    }
    const auto bytes = encoder.encode(b.build(), frame++);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    b.clear();
  }
  std::printf("wrote %s: %llu events\n", path, static_cast<unsigned long long>(steps * 2));
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

// The reader's share of a pass: frames read, checked, decompressed and
// decoded, each chunk's calls and kernels touched once so the records are really read.
int decode_trace(const char* path, int threads) {
  reader::TraceReader r;
  std::string error;
  if (!r.open_file(path, &error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 2;
  }
  r.set_read_ahead(threads > 1, 0);
  uint64_t records = 0, sum = 0;
  const auto t0 = std::chrono::steady_clock::now();
  r.read([&](const reader::ChunkView& v) {
    records += v.api_calls.size() + v.kernels.size();
    for (const auto& c : v.api_calls) sum += c.start_ns();
    for (const auto& k : v.kernels) sum += k.start_ns();
  });
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("decoded %llu records on %d thread(s) in %.3f s: %.2f M records/s (checksum %llu)\n",
              static_cast<unsigned long long>(records), threads, s, records / s / 1e6,
              static_cast<unsigned long long>(sum % 1000));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::string(argv[1]) == "write") return write_trace(argv[2], std::strtoull(argv[3], nullptr, 10));
  if (argc == 5 && std::string(argv[1]) == "write")
    return write_trace(argv[2], std::strtoull(argv[3], nullptr, 10), std::strtoull(argv[4], nullptr, 10));
  if (argc == 3 && std::string(argv[1]) == "read") return read_trace(argv[2]);
  if (argc == 4 && std::string(argv[1]) == "decode") return decode_trace(argv[2], std::atoi(argv[3]));
  if (argc == 4 && std::string(argv[1]) == "write-sparse")
    return write_sparse_trace(argv[2], std::strtoull(argv[3], nullptr, 10));
  std::fprintf(stderr, "usage: analyze_bench write FILE EVENTS [STEPS_PER_FRAME] | write-sparse FILE EVENTS | read FILE | decode FILE 1|2\n");
  return 2;
}
