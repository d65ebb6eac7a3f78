#!/usr/bin/env bash
# Runs gpuscope's benchmarks (release build) and prints the figures that
# docs/performance.md records. Run on an otherwise idle machine.
#  1. Google Benchmark programs: hot path, writer, stacks.
#  2. What a hooked CUDA call costs: hooked_call_loop with and without
#     libgpuscope.so (cudaGetDevice: no stack; cudaStreamSynchronize 32
#     frames deep: with a stack).
#  3. A launch-bound run (sync_bound --fixed, 200k launches) with and without.
# CUDA programs run on the real GPU when one is usable, else on simgpu.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-release -j"$(nproc)" >/dev/null
b=build-release/bin
for bench in "$b"/bench_*; do "$bench" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true; done

run() { samples/simgpu/gpu-or-simgpu build-release "$@"; }
traced() { run env LD_PRELOAD="$root/build-release/lib/libgpuscope.so" GPUSCOPE_OUTPUT="$out/" "$@"; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "== hooked call cost (plain, then under gpuscope; the difference is gpuscope's)"
for mode in get_device stream_sync; do
  run "$b/hooked_call_loop" "$mode" 200000
  traced "$b/hooked_call_loop" "$mode" 200000
done

echo "== launch-bound run: sync_bound --fixed --iters 200000, wall seconds"
TIMEFORMAT='%R s'
for i in 1 2 3; do
  echo -n "plain:  "; { time run "$b/sync_bound" --fixed --iters 200000 >/dev/null 2>&1; } 2>&1
  echo -n "traced: "; { time traced "$b/sync_bound" --fixed --iters 200000 >/dev/null 2>&1; } 2>&1
done
