#!/usr/bin/env bash
# Runs gpuscope's benchmarks (release build) and prints the figures that
# docs/performance.md records. Run on an otherwise idle machine.
#  1. Google Benchmark programs: hot path, writer, stacks.
#  2. What a hooked CUDA call costs: hooked_call_loop with and without
#     libgpuscope.so (cudaGetDevice: no stack; cudaStreamSynchronize 32
#     frames deep: with a stack).
#  3. A launch-bound run (sync_bound --fixed, 200k launches) with and without,
#     11 alternated pairs.
# CUDA programs run on the real GPU when one is usable, else on simgpu.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DGPUSCOPE_BUILD_SAMPLES=ON >/dev/null
cmake --build build-release -j"$(nproc)" >/dev/null
b=build-release/bin
for bench in "$b"/bench_*; do "$bench" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true; done

run() { samples/simgpu/gpu-or-simgpu build-release "$@"; }
traced() { run env LD_PRELOAD="$root/build-release/lib/libgpuscope.so" GPUSCOPE_OUTPUT="$out/" "$@"; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "== this machine's memory writes after idle (the control for the timed figures below)"
"$b/write_after_idle" 50

echo "== hooked call cost (plain, then under gpuscope; the difference is gpuscope's)"
# 10 000 calls a run (5 000 with stacks), 50 ms between runs: the writer
# drains the thread's buffer, so every call is recorded (not dropped).
for mode in "get_device 10000" "stream_sync 5000"; do
  run "$b/hooked_call_loop" $mode 50
  traced "$b/hooked_call_loop" $mode 50
done

echo "== launch-bound run: sync_bound --fixed --iters 200000 (simgpu: 3 us launches, 0.5 us kernels)"
# Plain and traced alternate, so the VM's drift hits both; the figure is the
# median of the per-pair overheads (docs/performance.md).
export SIMGPU_NODE="$root/tests/bench/launch_bound_node.json"  # ignored on a real GPU
seconds() { local s e; s=$(date +%s%N); "$@" >/dev/null 2>&1; e=$(date +%s%N); echo $(( (e - s) / 1000 )); }
for i in $(seq 11); do
  plain=$(seconds run "$b/sync_bound" --fixed --iters 200000)
  traced_us=$(seconds traced "$b/sync_bound" --fixed --iters 200000)
  echo "pair $i: plain $plain us, traced $traced_us us" >&2
  echo "$plain $traced_us"
done | awk '{ printf "%.4f\n", 100 * ($2 / $1 - 1) }' | sort -g | awk '{ r[NR] = $1 } END { printf "median pair overhead: %+.1f %% (%d pairs)\n", r[int((NR + 1) / 2)], NR }'
