#!/usr/bin/env bash
# gpuscope's cost per intercepted call beside other interception tools on
# this machine, in the same run (issue 23; docs/performance.md, "Beside
# other interception tools"). Each round runs every case once, so a drifting
# VM hits them all alike; each figure is the median over the rounds of
# (traced - plain) in ns per call, from hooked_call_loop's own timing.
#   gpuscope      cudaGetDevice, recorded as a full event with its duration
#   gpuscope+stack cudaStreamSynchronize 32 frames deep, stack captured
#   LD_AUDIT      the same cudaGetDevice through tests/bench/audit_tracer.cpp
#                 (la_pltenter/la_pltexit, entry and exit time per call)
#   ltrace        the same cudaGetDevice under ltrace -e (ptrace breakpoints;
#                 fewer iterations, it is four orders slower)
#   heaptrack     malloc(64)+free, which heaptrack records with a stack
#   gpuscope, malloc  the same malloc loop under gpuscope (not hooked: ~0)
# Tools that are not installed are skipped and said so.
# usage: scripts/bench-interceptors.sh [ROUNDS]   (default 7)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
rounds=${1:-7}
cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DGPUSCOPE_BUILD_SAMPLES=ON >/dev/null
cmake --build build-release -j"$(nproc)" --target gpuscope hooked_call_loop audit_tracer gpu_probe simgpu_cudart >/dev/null
b=$root/build-release
# Decide once between the real GPU and simgpu (the probe says which on stderr).
LD_LIBRARY_PATH=$(samples/simgpu/gpu-or-simgpu build-release sh -c 'printf %s "$LD_LIBRARY_PATH"')
export LD_LIBRARY_PATH
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

loop() { "$@" | awk '{ print $2 }'; }  # "mode: 12.3 ns per call ..." -> 12.3
gpuscope() { env LD_PRELOAD="$b/lib/libgpuscope.so" GPUSCOPE_OUTPUT="$out/" "$@"; }
audited() { env LD_AUDIT="$b/lib/libaudit_tracer.so" "$@"; }
have() { command -v "$1" >/dev/null 2>&1; }
have ltrace || echo "bench-interceptors: ltrace not installed, skipped" >&2
have heaptrack || echo "bench-interceptors: heaptrack not installed, skipped" >&2

# 10 000 calls a run, 50 ms between runs (hooked_call_loop's pause): each
# tool's buffer drains in the pause, so every call is recorded; back-to-back
# runs of 200 000 filled gpuscope's and most of its records were dropped.
n="10000 50" n_stack="5000 50"  # calls with stacks take more of the buffer
cases="gpuscope gpuscope+stack LD_AUDIT ltrace heaptrack gpuscope,malloc"
for r in $(seq "$rounds"); do
  gd=$(loop "$b/bin/hooked_call_loop" get_device $n)
  ss=$(loop "$b/bin/hooked_call_loop" stream_sync $n_stack)
  mf=$(loop "$b/bin/hooked_call_loop" malloc_free $n)
  echo "gpuscope $(loop gpuscope "$b/bin/hooked_call_loop" get_device $n) $gd"
  echo "gpuscope+stack $(loop gpuscope "$b/bin/hooked_call_loop" stream_sync $n_stack) $ss"
  echo "LD_AUDIT $(loop audited "$b/bin/hooked_call_loop" get_device $n) $gd"
  if have ltrace; then
    echo "ltrace $(loop ltrace -o "$out/ltrace.txt" -e cudaGetDevice "$b/bin/hooked_call_loop" get_device 2000) $gd"
  fi
  if have heaptrack; then
    echo "heaptrack $(heaptrack -o "$out/heaptrack" "$b/bin/hooked_call_loop" malloc_free $n 2>/dev/null |
      grep 'ns per call' | awk '{ print $2 }') $mf"
  fi
  echo "gpuscope,malloc $(loop gpuscope "$b/bin/hooked_call_loop" malloc_free $n) $mf"
  rm -rf "${out:?}"/*
  echo "round $r of $rounds done" >&2
done > "$out.rounds"
echo "== added ns per call: median over $rounds rounds [min, max]; plain's median; ratio to gpuscope's"
awk -v cases="$cases" '
  { added[$1, ++k[$1]] = $2 - $3; plain[$1, k[$1]] = $3 }
  function median(name, arr,   i, n, v, j, t) {
    n = k[name]; for (i = 1; i <= n; ++i) v[i] = arr[name, i]
    for (i = 2; i <= n; ++i) for (j = i; j > 1 && v[j - 1] > v[j]; --j) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
    lo = v[1]; hi = v[n]; return (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
  }
  END {
    split(cases, names, " "); base = median("gpuscope", added)
    for (c = 1; c in names; ++c) {
      name = names[c]; if (!(name in k)) continue
      m = median(name, added); l = lo; h = hi; p = median(name, plain)
      printf "%-16s %10.1f ns [%.1f, %.1f]  plain %.1f ns  %6.1fx gpuscope\n", name, m, l, h, p, m / base
    }
  }' "$out.rounds"
rm -f "$out.rounds"
