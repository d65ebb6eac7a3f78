// Hot-path cost: what a hook adds to each CUDA call it wraps.
// Figures and the command that produced them: docs/performance.md.
#include <benchmark/benchmark.h>

#include <filesystem>

#include "bench_session.h"

namespace {

using namespace gpuscope::capture;

using gpuscope::bench::ensure_session;

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

int main(int argc, char** argv) { return gpuscope::bench::run_benchmarks(argc, argv); }
