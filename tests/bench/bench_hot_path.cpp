// Hot-path cost: what a hook adds to each CUDA call it wraps.
// Figures and the command that produced them: docs/performance.md.
#include <benchmark/benchmark.h>

#include <thread>

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

// A launch: the ApiCall and its Kernel record (the pair a copy, sync,
// allocation or launch hook writes), one clock pair for both.
void BM_RecordCallWithKernel(benchmark::State& state) {
  ensure_session();
  const uint32_t fid = session_strings().intern("cudaLaunchKernel");
  for (auto _ : state) {
    ApiCallScope scope(fid);
    benchmark::DoNotOptimize(scope.finish_with(0, 0, 0, 0, 0, [&](uint64_t end) {
      return gpuscope::fb::Kernel(scope.start(), end - scope.start(), scope.correlation_id(), 0, fid, 1, 1, 1, 256, 1,
                                  1, 0, 0, gpuscope::fb::Source::Host, 0, 0, 0);
    }));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RecordCallWithKernel)->Repetitions(5)->ReportAggregatesOnly(true);

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

// Outside a capture window (Phase::Paused, issue 7), target <= 5 ns added
// per call: on a thread that recorded in an earlier window (its buffer
// attached) and on one that has never recorded (no buffer: the attach path
// says no).
void outside_window_loop(benchmark::State& state, uint32_t fid) {
  for (auto _ : state) {
    ApiCallScope scope(fid);
    benchmark::DoNotOptimize(scope.finish(0));
  }
}

void BM_ApiCallOutsideWindow(benchmark::State& state) {
  ensure_session();
  const uint32_t fid = session_strings().intern("cudaGetDevice");
  ApiCallScope(fid).finish(0);  // this thread has a buffer now
  detail::g_phase.store(Phase::Paused);
  if (state.range(0) == 0) {
    outside_window_loop(state, fid);
  } else {
    std::thread fresh([&] { outside_window_loop(state, fid); });
    fresh.join();
  }
  detail::g_phase.store(Phase::Recording);
}
BENCHMARK(BM_ApiCallOutsideWindow)->Arg(0)->Arg(1)->Repetitions(5)->ReportAggregatesOnly(true);

}  // namespace

int main(int argc, char** argv) { return gpuscope::bench::run_benchmarks(argc, argv); }
