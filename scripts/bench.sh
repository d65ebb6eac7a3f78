#!/usr/bin/env bash
# Runs gpuscope's benchmarks (release build) and prints the figures that
# docs/performance.md records. Run on an otherwise idle machine.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DGPUSCOPE_BUILD_SAMPLES=OFF >/dev/null
cmake --build build-release -j"$(nproc)" --target bench_hot_path bench_writer >/dev/null
build-release/bin/bench_hot_path --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
build-release/bin/bench_writer
