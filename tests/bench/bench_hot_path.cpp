// Hot-path cost: what a hook adds to each CUDA call it wraps.
// Figures and the command that produced them: docs/performance.md.
#include <benchmark/benchmark.h>

#include <filesystem>

#include "session.h"

namespace {

using namespace gpuscope::capture;

std::string g_trace_dir;

// One recording session for the whole benchmark program: 64 MiB rings so
// the writer (draining every millisecond on the other core) keeps up and
// the loop measures recording, not dropping.
void ensure_session() {
  if (current_phase() == Phase::Recording) return;
  g_trace_dir = std::filesystem::temp_directory_path() / "gpuscope-bench-XXXXXX";
  if (mkdtemp(g_trace_dir.data()) == nullptr) std::abort();
  SessionOptions o;
  o.ring_kb = 64 * 1024;
  o.max_threads = 8;
  o.drain_interval_ms = 1;
  o.cpu_sample_interval_ms = 0;
  std::string error;
  if (!start_session(o, g_trace_dir + "/bench.gpuscope", collect_process_metadata(), &error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    std::abort();
  }
}

void BM_MonotonicClock(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(monotonic_ns());
}
BENCHMARK(BM_MonotonicClock);

// One API-call event: re-entrancy check, correlation id, two clock reads,
// 56-byte record into the thread's ring.
void BM_RecordApiCall(benchmark::State& state) {
  ensure_session();
  const uint32_t fid = session_strings().intern("cudaGetDevice");
  for (auto _ : state) {
    ApiCallScope scope(fid);
    benchmark::DoNotOptimize(scope.finish(0));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RecordApiCall)->Repetitions(5)->ReportAggregatesOnly(true);

// The same call while gpuscope is loaded but not recording (capture stopped
// or, later, outside a capture window): the flag check alone.
void BM_ApiCallNotRecording(benchmark::State& state) {
  ensure_session();
  const uint32_t fid = session_strings().intern("cudaGetDevice");
  {
    InternalScope internal;  // takes the same early exit as a non-recording phase
    for (auto _ : state) {
      ApiCallScope scope(fid);
      benchmark::DoNotOptimize(scope.finish(0));
    }
  }
}
BENCHMARK(BM_ApiCallNotRecording);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  if (current_phase() == Phase::Recording) {
    stop_session(gpuscope::fb::EndKind::Exit, 0);
    std::filesystem::remove_all(g_trace_dir);
  }
  benchmark::Shutdown();
  return 0;
}
