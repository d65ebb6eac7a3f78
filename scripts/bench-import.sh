#!/usr/bin/env bash
# Import speed and memory on large Kineto traces (docs/performance.md,
# "Importing Kineto traces"). Not part of CI.
#
#   scripts/bench-import.sh [--gpuscope BIN] [--events N,...] [--runs R]
#                           [--workload W] [--dir DIR] [--hta VENV] [--hta-max N]
#
# Writes a `healthy` training-loop trace (scripts/bench_import_trace.py,
# gen_kineto.py's layout repeated) of each size in --events (default
# 450000,4500000 events: about 100 MB and 1 GB), plain and gzipped; then
# times gpuscope importing each one --runs times (default 3) under
# /usr/bin/time -v and prints the median wall time, CPU time (user +
# system), million events per second (traceEvents elements over the wall
# time, and over the CPU time: on a loaded machine the process waits for a
# core and only the latter is the importer's own speed) and peak RSS.
# `gpuscope import IN -o OUT` is timed where the binary has it, else
# `gpuscope info IN` (which imports, then reads the result's header).
# With --hta VENV (a virtual environment holding HolisticTraceAnalysis:
# `python3 -m venv V && V/bin/pip install HolisticTraceAnalysis 'pandas<3'`;
# HTA 0.5.0 fails under pandas 3 on traces of more than 32767 events),
# HTA's TraceAnalysis(trace_dir=...) load of the same traces is timed too,
# for sizes up to --hta-max events (default 450000: HTA holds the whole
# trace in pandas frames). Traces are kept in DIR (default
# ${TMPDIR:-/tmp}/gpuscope-bench-import) and reused when present.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
gpuscope="$root/build/bin/gpuscope" sizes="450000,4500000" runs=3 workload=healthy
dir="${TMPDIR:-/tmp}/gpuscope-bench-import" hta="" hta_max=450000
while [[ $# -gt 0 ]]; do
  case "$1" in
    --gpuscope) gpuscope="$2"; shift 2 ;;
    --events) sizes="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --workload) workload="$2"; shift 2 ;;
    --dir) dir="$2"; shift 2 ;;
    --hta) hta="$2"; shift 2 ;;
    --hta-max) hta_max="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench-import.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ -x "$gpuscope" ]] || { echo "bench-import.sh: $gpuscope is not executable (build gpuscope_cli, or pass --gpuscope)" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "bench-import.sh: /usr/bin/time is missing (Debian package time)" >&2; exit 2; }
[[ -z "$hta" || -x "$hta/bin/python" ]] || { echo "bench-import.sh: $hta/bin/python is missing" >&2; exit 2; }
mkdir -p "$dir"

# One timed run: prints "wall_s cpu_s peak_rss_kb" (from /usr/bin/time -v).
timed() {
  local log="$dir/time.log"
  /usr/bin/time -v "$@" >/dev/null 2>"$log" || { cat "$log" >&2; return 1; }
  awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, p, ":"); w = 0; for (i = 1; i <= n; i++) w = w * 60 + p[i] }
              /User time/ { u = $2 } /System time/ { s = $2 } /Maximum resident/ { m = $2 }
              END { printf "%.2f %.2f %d\n", w, u + s, m }' "$log"
}

# The median of --runs timed runs, by wall time: "wall_s cpu_s peak_rss_kb".
median_of_runs() {
  local i
  for ((i = 0; i < runs; i++)); do timed "$@"; done | sort -n | sed -n "$(((runs + 1) / 2))p"
}

trace_for() {  # events gzip(0|1) -> path; written once, reused
  local events=$1 gz=$2 out
  out="$dir/$workload-$events.pt.trace.json"
  [[ $gz == 1 ]] && out+=.gz
  if [[ ! -s "$out" || ! -s "$out.events" ]]; then
    python3 "$root/scripts/bench_import_trace.py" "$workload" "$out" --events "$events" \
      $([[ $gz == 1 ]] && echo --gzip) > "$out.events"
  fi
  echo "$out"
}

help=$("$gpuscope" --help 2>/dev/null || true)
if grep -qE "^ +import +" <<<"$help"; then mode=import; else mode=info; fi
echo "# $(uname -m), $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# gpuscope $mode, median of $runs runs; $(date -u +%Y-%m-%dT%H:%MZ)"
printf '%-10s %-9s %10s %9s %8s %8s %10s %10s %10s\n' tool file events MB wall_s cpu_s "Mev/s" "Mev/cpu-s" peak_MiB

per_second() { awk -v e="$1" -v t="$2" 'BEGIN { print (t > 0 ? e / t / 1e6 : 0) }'; }

report() {  # tool path events "wall cpu rss"
  local tool=$1 path=$2 events=$3 wall cpu rss
  read -r wall cpu rss <<<"$4"
  printf '%-10s %-9s %10d %9.1f %8.2f %8.2f %10.2f %10.2f %10.1f\n' "$tool" "$(basename "$path" | sed 's/.*\.json/json/')" \
    "$events" "$(($(stat -c %s "$path") / 1000))e-3" "$wall" "$cpu" "$(per_second "$events" "$wall")" \
    "$(per_second "$events" "$cpu")" "$(awk -v r="$rss" 'BEGIN { print r / 1024 }')"
}

IFS=, read -r -a size_list <<<"$sizes"
if [[ -n "$hta" ]]; then  # what starting Python and importing HTA (pandas...) costs before any trace
  printf '%-10s %-9s %s\n' HTA "(start)" "$(median_of_runs "$hta/bin/python" -c 'from hta.trace_analysis import TraceAnalysis')"
fi
for events in "${size_list[@]}"; do
  for gz in 0 1; do
    path="$(trace_for "$events" "$gz")"
    count="$(cat "$path.events")"
    if [[ $mode == import ]]; then
      result="$(median_of_runs bash -c 'rm -f "$2"; exec "$0" import "$1" -o "$2"' "$gpuscope" "$path" "$dir/out.gpuscope")"
    else
      result="$(median_of_runs "$gpuscope" info "$path")"
    fi
    report gpuscope "$path" "$count" "$result"
    if [[ -n "$hta" && $events -le $hta_max ]]; then
      # HTA reads every trace in a directory, one per rank, named as Kineto names them.
      hta_dir="$dir/hta-$events-$gz"
      mkdir -p "$hta_dir"
      ln -sf "$path" "$hta_dir/rank-0.pt.trace.json$([[ $gz == 1 ]] && echo .gz)"
      result="$(median_of_runs "$hta/bin/python" -c 'import sys; from hta.trace_analysis import TraceAnalysis; TraceAnalysis(trace_dir=sys.argv[1])' "$hta_dir")"
      report HTA "$path" "$count" "$result"
    fi
  done
done
