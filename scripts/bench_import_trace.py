#!/usr/bin/env python3
"""Writes a large Kineto trace for scripts/bench-import.sh, fast.

gen_kineto.py builds the whole document in memory, which does not scale to
millions of events. This writes one period of a gen_kineto workload (its
events laid out exactly as gen_kineto lays them out), then repeats it until
the file holds about --events events, each repetition shifted in time by the
period and in correlation id by the ids the period used, so every host call
still joins its device record and timestamps keep increasing. Each
repetition is one profiler step (ProfilerStep#R over the whole period; the
workload's own steps become user annotations "iteration#k"): a profiler
records a few long steps, not thousands, and HTA assigns every event its
step by a scan over all steps, which a trace of thousands of steps turns
into most of its load time.
Usage: bench_import_trace.py WORKLOAD OUT --events N [--gzip]
"""
import argparse
import gzip
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "import"))
import gen_kineto  # noqa: E402

PERIOD_STEPS = 100


def period(workload):
    """One period's events, the document around them and its length in us."""
    opts = argparse.Namespace(spelling="new", sparse=False, world=0, rank=0)
    t = gen_kineto.WORKLOADS[workload](gen_kineto.Trace(opts), PERIOD_STEPS)
    doc = t.document()
    events = t.events
    end = max(float(e["ts"]) + float(e.get("dur", 0)) for e in events) - t.t0
    return doc, events, float(int(end) + 100), t.corr - 1000


def template(e, span_us):
    """The event as gen_kineto writes it, with its time, ids and step to fill in."""
    e = dict(e)
    if e["name"].startswith("ProfilerStep#"):
        first = e["name"] == "ProfilerStep#0"
        e["name"] = "ProfilerStep#@STEP@" if first else e["name"].replace("ProfilerStep#", "iteration#")
        if first:
            e["dur"] = span_us
    e["ts"] = "@TS@"
    args = dict(e.get("args", {}))
    for key in ("correlation", "external id"):
        if key in args:
            args[key] = "@C%s@" % key
    if args:
        e["args"] = args
    text = json.dumps(e, indent=1).replace("%", "%%").replace('"@TS@"', "%(ts).3f")
    text = text.replace('"@Ccorrelation@"', "%(c)d").replace('"@Cexternal id@"', "%(c)d").replace("@STEP@", "%(step)d")
    return text


def write(workload, out, target_events, compress):
    doc, events, span_us, ids = period(workload)
    templates = []
    for e in events:
        text = template(e, span_us - 100)
        corr = e.get("args", {}).get("correlation", 0)
        templates.append((text, float(e["ts"]), corr))
    repeats = max(1, round(target_events / len(events)))
    meta = doc.pop("traceEvents")[len(events):]
    head = {k: v for k, v in doc.items() if k not in ("traceName", "baseTimeNanoseconds")}
    opener = gzip.open if compress else open
    written = 0
    with opener(out, "wt", **({"compresslevel": 6} if compress else {})) as f:
        f.write(json.dumps(head, indent=1)[:-2] + ',\n "traceEvents": [\n')
        for r in range(repeats):
            shift, corr_shift = r * span_us, r * ids
            f.write(",\n".join(text % {"ts": ts + shift, "c": corr + corr_shift, "step": r}
                                for text, ts, corr in templates))
            f.write(",\n")
            written += len(templates)
        f.write(",\n".join(json.dumps(m, indent=1) for m in meta))
        written += len(meta)
        f.write('\n ],\n "traceName": "bench.pt.trace.json",\n "baseTimeNanoseconds": %d\n}\n'
                % doc.get("baseTimeNanoseconds", 0))
    return written


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("workload", choices=sorted(gen_kineto.WORKLOADS))
    p.add_argument("out")
    p.add_argument("--events", type=int, required=True, help="about this many traceEvents elements")
    p.add_argument("--gzip", action="store_true")
    args = p.parse_args()
    print(write(args.workload, args.out, args.events, args.gzip))
    return 0


if __name__ == "__main__":
    sys.exit(main())
