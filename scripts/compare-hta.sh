#!/usr/bin/env bash
# Compares gpuscope's GPU time breakdown with Holistic Trace Analysis's
# (temporal breakdown and idle-time breakdown) on the same Kineto traces,
# side by side (docs/import.md, "Compared with Holistic Trace Analysis").
# Not part of CI: it installs HTA from PyPI into a throwaway virtual
# environment (or the one --venv names, kept for the next run).
#
#   scripts/compare-hta.sh [--venv DIR] [--gpuscope BIN] [--hta-rounding]
#                          [--markdown] [--tolerance PP] TRACE|DIR...
#
# HTA rounds fractional-microsecond timestamps to whole microseconds (start
# up, end down); gpuscope keeps nanoseconds. By default HTA runs with its own
# switch against that (HTA_DISABLE_NS_ROUNDING=1) so both see the same
# times; --hta-rounding compares with HTA's default instead.
# Exit status: 0 when every difference is within the tolerance (1 pp), 1
# otherwise, 2 on a usage or set-up error.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="" gpuscope="$root/build/bin/gpuscope" rounding=0
passthrough=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --venv) venv="$2"; shift 2 ;;
    --gpuscope) gpuscope="$2"; shift 2 ;;
    --hta-rounding) rounding=1; shift ;;
    --markdown) passthrough+=(--markdown); shift ;;
    --tolerance) passthrough+=(--tolerance "$2"); shift 2 ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "compare-hta.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) break ;;
  esac
done
if [[ $# -eq 0 ]]; then
  echo "compare-hta.sh: name at least one Kineto trace or directory of rank traces (see --help)" >&2
  exit 2
fi
if [[ ! -x "$gpuscope" ]]; then
  echo "compare-hta.sh: $gpuscope is not an executable gpuscope (build it, or pass --gpuscope)" >&2
  exit 2
fi

if [[ -z "$venv" ]]; then
  venv="$(mktemp -d "${TMPDIR:-/tmp}/gpuscope-hta.XXXXXX")"
  trap 'rm -rf "$venv"' EXIT
fi
if [[ ! -x "$venv/bin/python" ]]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check HolisticTraceAnalysis
fi
echo "HTA $("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("HolisticTraceAnalysis"))')," \
     "timestamps $([[ $rounding == 1 ]] && echo "rounded to whole us (HTA's default)" || echo "in ns (HTA_DISABLE_NS_ROUNDING=1)")" >&2

if [[ $rounding == 0 ]]; then export HTA_DISABLE_NS_ROUNDING=1; fi
"$venv/bin/python" "$root/scripts/compare_hta.py" --gpuscope "$gpuscope" "${passthrough[@]}" "$@"
