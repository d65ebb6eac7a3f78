// Call-stack cost: capture_stack_id() alone at depth 8 and 32, and a whole
// recorded hooked call with a 32-frame stack, each measured at the bottom
// of a real 32-deep chain of calls (so libunwind walks as many frames as it
// would under a CUDA call made from application code).
// Target (issue 4): a recorded call with a 32-frame stack <= 300 ns median.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <memory>

#include "bench_session.h"
#include "stacks/stack_capture.h"

namespace {

using namespace gpuscope::capture;
namespace stacks = gpuscope::stacks;

std::unique_ptr<TraceSource> g_stack_source;

// The common session, with the stack source polled by its writer.
void ensure_session() {
  if (current_phase() == Phase::Recording) return;
  stacks::configure_stacks(true, 32);
  g_stack_source = stacks::make_stack_source();
  gpuscope::bench::ensure_session({g_stack_source.get()});
}

using Body = void (*)(benchmark::State&);

// A chain of N distinct, non-inlined functions above `body`; the empty asm
// after each call keeps it from becoming a tail call, so every level is a
// real frame with a return address.
template <int N> __attribute__((noinline)) void descend(benchmark::State& state, Body body) {
  if constexpr (N == 0) {
    body(state);
  } else {
    descend<N - 1>(state, body);
  }
  asm volatile("" ::: "memory");
}

void capture_only(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(stacks::capture_stack_id());
}

void BM_CaptureStackId(benchmark::State& state) {
  stacks::configure_stacks(true, static_cast<uint32_t>(state.range(0)));
  descend<32>(state, capture_only);
  stacks::configure_stacks(true, 32);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_CaptureStackId)->Arg(8)->Arg(32)->Repetitions(5)->ReportAggregatesOnly(true);

// What a hook does for cudaStreamSynchronize and the like: the scope, the
// stack, the ApiCall record carrying the stack id.
void recorded_call_with_stack(benchmark::State& state) {
  const uint32_t fid = session_strings().intern("cudaStreamSynchronize");
  for (auto _ : state) {
    ApiCallScope scope(fid);
    benchmark::DoNotOptimize(scope.finish(0, 0, 0, -1, stacks::capture_stack_id()));
  }
}

void recorded_call_without_stack(benchmark::State& state) {
  const uint32_t fid = session_strings().intern("cudaStreamSynchronize");
  for (auto _ : state) {
    ApiCallScope scope(fid);
    benchmark::DoNotOptimize(scope.finish(0));
  }
}

void BM_RecordedCallStack32(benchmark::State& state) {
  ensure_session();
  stacks::configure_stacks(true, 32);
  descend<32>(state, recorded_call_with_stack);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RecordedCallStack32)->Repetitions(5)->ReportAggregatesOnly(true);

// The same call site without a stack: the difference is the stack's cost.
void BM_RecordedCallNoStack(benchmark::State& state) {
  ensure_session();
  descend<32>(state, recorded_call_without_stack);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RecordedCallNoStack)->Repetitions(5)->ReportAggregatesOnly(true);

}  // namespace

int main(int argc, char** argv) { return gpuscope::bench::run_benchmarks(argc, argv); }
