#!/usr/bin/env python3
"""Side by side: Holistic Trace Analysis's temporal and idle-time breakdowns
and gpuscope's (`gpuscope analyze --json`, breakdown.gpu_time_breakdown) on
the same Kineto traces. Run through scripts/compare-hta.sh, which makes the
virtual environment HTA is installed in; not part of CI.

Each argument is a trace file (one rank) or a directory of rank files (HTA
reads the directory as one job; gpuscope reads each file). Prints one row
per rank: idle, compute and non-compute as % of the GPU span, and host
wait, kernel wait and other as % of idle time (summed over streams), for
HTA, gpuscope and the difference in percentage points.
"""
import argparse
import gzip
import json
import logging
import os
import subprocess
import sys
import tempfile

COLUMNS = ["idle", "compute", "non_compute", "host_wait", "kernel_wait", "other"]


def open_trace(path):
    return gzip.open(path, "rt") if path.endswith(".gz") else open(path, "rt")


def hta_readable(path, scratch):
    """Early Kineto files are a bare JSON list of events, which HTA cannot
    read: HTA gets a copy wrapped in {"traceEvents": [...]}, same events."""
    with open_trace(path) as f:
        first = f.read(64).lstrip()
    if not first.startswith("["):
        return path, False
    with open_trace(path) as f:
        events = json.load(f)
    wrapped = os.path.join(scratch, os.path.basename(path).replace(".gz", "") + ".wrapped.json")
    with open(wrapped, "w") as f:
        json.dump({"traceEvents": events}, f)
    return wrapped, True


def hta_breakdowns(path, scratch):
    """{rank: (row, file)} from HTA; row holds the six shares in %."""
    from hta.trace_analysis import TraceAnalysis

    if os.path.isdir(path):
        analysis = TraceAnalysis(trace_dir=path)
        files = dict(analysis.t.trace_files)
        notes = ""
    else:
        readable, wrapped = hta_readable(os.path.abspath(path), scratch)
        analysis = TraceAnalysis(trace_files={0: readable}, trace_dir=os.path.dirname(readable))
        files = {0: os.path.abspath(path)}
        notes = "bare event list: HTA read a wrapped copy" if wrapped else ""
    temporal = analysis.get_temporal_breakdown(visualize=False)
    ranks = sorted(int(r) for r in temporal["rank"])
    idle, _ = analysis.get_idle_time_breakdown(ranks=ranks, visualize=False)
    out = {}
    for _, row in temporal.iterrows():
        rank = int(row["rank"])
        span = float(row["kernel_time(us)"])
        by_cause = idle[idle["rank"] == rank].groupby("idle_category")["idle_time"].sum().to_dict()
        total = sum(by_cause.values())
        shares = {
            "idle": 100 * float(row["idle_time(us)"]) / span,
            "compute": 100 * float(row["compute_time(us)"]) / span,
            "non_compute": 100 * float(row["non_compute_time(us)"]) / span,
        }
        for cause in ("host_wait", "kernel_wait", "other"):
            shares[cause] = 100 * by_cause.get(cause, 0.0) / total if total > 0 else None
        out[rank] = (shares, files.get(rank, path), notes)
    return out


def gpuscope_breakdown(gpuscope, path):
    """The devices of `gpuscope analyze --json`, or an error line."""
    run = subprocess.run([gpuscope, "analyze", "--json", path], capture_output=True, text=True)
    if run.returncode != 0:
        return None, (run.stderr.strip().splitlines() or ["exit %d" % run.returncode])[-1]
    doc = json.loads(run.stdout)
    split = doc["breakdown"].get("gpu_time_breakdown")
    if not split:
        return None, "no GPU time breakdown (no device records)"
    rows = []
    for d in split["devices"]:
        row = {
            "idle": 100 * d["idle_share"],
            "compute": 100 * d["compute_share"],
            "non_compute": 100 * d["non_compute_share"],
        }
        for cause, key in (("host_wait", "idle_host_wait_share"), ("kernel_wait", "idle_kernel_wait_share"),
                           ("other", "idle_other_share")):
            row[cause] = None if d[key] is None else 100 * d[key]
        rows.append((d["device"], row))
    verdict = doc["verdict"]["label"]
    return (rows, verdict, split["last_profiler_step_left_out"]), None


def cell(value):
    return "-" if value is None else "%.2f" % value


def delta(a, b):
    return None if a is None or b is None else b - a


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpuscope", default="gpuscope", help="the gpuscope binary")
    parser.add_argument("--tolerance", type=float, default=1.0, help="percentage points")
    parser.add_argument("--markdown", action="store_true", help="a Markdown table (docs/import.md)")
    parser.add_argument("traces", nargs="+")
    args = parser.parse_args()
    logging.disable(logging.WARNING)

    header = ["trace", "rank", "dev"] + ["%s HTA/gs/Δ" % c for c in COLUMNS] + ["verdict", "notes"]
    sep = " | " if args.markdown else "  "
    print(("| " if args.markdown else "") + sep.join(header) + (" |" if args.markdown else ""))
    if args.markdown:
        print("|" + "---|" * len(header))
    worst, not_compared = 0.0, 0
    with tempfile.TemporaryDirectory() as scratch:
        for path in args.traces:
            try:
                hta = hta_breakdowns(path, scratch)
            except Exception as error:  # one unreadable trace must not hide the others
                print("%s: HTA failed: %s: %s" % (path, type(error).__name__, error))
                not_compared += 1
                continue
            for rank, (ref, file, notes) in sorted(hta.items()):
                ours, error = gpuscope_breakdown(args.gpuscope, file)
                name = os.path.basename(file)
                if ours is None:
                    print(sep.join([name, str(rank), "-", "gpuscope: " + error]))
                    not_compared += 1
                    continue
                rows, verdict, _ = ours
                if len(rows) > 1:
                    notes = (notes + "; " if notes else "") + "HTA merges the rank's devices"
                for device, row in rows:
                    cells = []
                    for c in COLUMNS:
                        d = delta(ref[c], row[c])
                        if d is not None and len(rows) == 1:
                            worst = max(worst, abs(d))
                        cells.append("%s/%s/%s" % (cell(ref[c]), cell(row[c]), "-" if d is None else "%+.2f" % d))
                    line = sep.join([name, str(rank), str(device)] + cells + [verdict, notes])
                    print(("| " + line + " |") if args.markdown else line)
    print("largest difference: %.2f percentage points (tolerance %.1f); %d trace(s) or rank(s) not compared"
          % (worst, args.tolerance, not_compared))
    return 0 if worst <= args.tolerance and not_compared == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
