#!/usr/bin/env python3
"""End to end: gpuscope's commands on generated PyTorch profiler (Kineto) traces.

The traces are written at test time by gen_kineto.py into WORKDIR (one
directory per test; nothing generated is checked in).

  check_kineto_cli.py GPUSCOPE GEN WORKDIR verdict WORKLOAD CLASS [GEN OPTIONS]
      `analyze --json` on one trace gives the verdict CLASS (--gzip writes
      the trace gzip-compressed)
  check_kineto_cli.py GPUSCOPE GEN WORKDIR ranks WORKLOAD CLASS [GEN OPTIONS]
      ranks 0 and 1 of a world of 2, analyzed as a directory: both traces,
      each with its rank and world size and the verdict CLASS
  check_kineto_cli.py GPUSCOPE GEN WORKDIR error KIND TEXT
      a bad file of KIND: exit status 2 and one line on stderr naming the
      file and TEXT; for damage after events (truncated or corrupt in the
      middle), the report of what came before it on stdout as well
  check_kineto_cli.py GPUSCOPE GEN WORKDIR commands WORKLOAD
      info, export (perfetto) and report (HTML) on a trace exit 0 with output
"""
import gzip
import json
import math
import os
import shutil
import subprocess
import sys

TIMEOUT = 120


def fail(message):
    print(message)
    return 1


def generate(gen, workload, out, options):
    subprocess.run([sys.executable, gen, workload, out] + options, check=True, timeout=TIMEOUT)
    return out


def analyze(gpuscope, path):
    return subprocess.run([gpuscope, "analyze", "--json", path], capture_output=True, text=True, timeout=TIMEOUT)


def explain(doc):
    return (json.dumps(doc["verdict"], indent=1) + "\n" + json.dumps(doc["findings"], indent=1)[:4000] + "\n" +
            "\n".join(str(c) for c in doc.get("coverage", [])))


def check_verdict(gpuscope, gen, workdir, workload, expected, options):
    name = workload + ".pt.trace.json" + (".gz" if "--gzip" in options else "")
    path = generate(gen, workload, os.path.join(workdir, name), options)
    run = analyze(gpuscope, path)
    if run.returncode != 0:
        return fail(f"exit {run.returncode}\n{run.stderr}")
    doc = json.loads(run.stdout)
    if doc["verdict"]["class"] != expected:
        return fail(f"verdict {doc['verdict']['class']}, expected {expected}\n" + explain(doc))
    return 0


def check_ranks(gpuscope, gen, workdir, workload, expected, options):
    ranks = os.path.join(workdir, "ranks")
    os.makedirs(ranks)
    for rank in (0, 1):
        generate(gen, workload, os.path.join(ranks, f"rank{rank}.pt.trace.json"),
                 options + ["--rank", str(rank), "--world", "2"])
    run = analyze(gpuscope, ranks)
    if run.returncode != 0:
        return fail(f"exit {run.returncode}\n{run.stderr}")
    traces = json.loads(run.stdout).get("traces", [])
    if len(traces) != 2:
        return fail(f"expected the two ranks' traces, got {len(traces)}:\n{run.stdout[:2000]}")
    seen = sorted((t["process"]["rank"], t["process"]["world_size"]) for t in traces)
    if seen != [(0, 2), (1, 2)]:
        return fail(f"expected ranks 0 and 1 of a world of 2, got {seen}")
    for t in traces:
        if t["verdict"]["class"] != expected:
            return fail(f"rank {t['process']['rank']}: verdict {t['verdict']['class']}, expected {expected}\n" +
                        explain(t))
    return 0


def cut(data, fraction):
    return data[:int(len(data) * fraction)]


# Each bad file: its name and bytes.
def bad_file(gen, workdir, kind):
    if kind.startswith("truncated_"):
        gz = kind == "truncated_gzip"
        whole = generate(gen, "healthy", os.path.join(workdir, "whole.json" + (".gz" if gz else "")),
                         ["--gzip"] if gz else [])
        with open(whole, "rb") as f:
            data = f.read()
        return ("cut.pt.trace.json" + (".gz" if gz else ""), cut(data, 0.6))
    if kind == "corrupt_gzip":
        with open(generate(gen, "healthy", os.path.join(workdir, "whole.json.gz"), ["--gzip"]), "rb") as f:
            data = bytearray(f.read())
        middle = len(data) // 2
        data[middle:middle + 64] = b"\xff" * 64
        return ("corrupt.pt.trace.json.gz", bytes(data))
    documents = {
        "invalid_json": b'{"traceEvents" [{"ph": "X"}]}',
        "not_a_trace": b'{"a":1}',
        "empty_events": b'{"schemaVersion": 1, "traceEvents": []}',
        "element_not_object": b'{"traceEvents": [42, {"ph": "X"}]}',
        "empty_gzip": gzip.compress(b""),
    }
    return (kind + ".json", documents[kind])


# Bad files whose damage comes after events: those are analyzed as well.
DAMAGE_AFTER_EVENTS = ("truncated_gzip", "truncated_json", "corrupt_gzip")


def check_error(gpuscope, gen, workdir, kind, text):
    name, data = bad_file(gen, workdir, kind)
    path = os.path.join(workdir, name)
    with open(path, "wb") as f:
        f.write(data)
    run = analyze(gpuscope, path)
    lines = run.stderr.strip().splitlines()
    if not (run.returncode == 2 and len(lines) == 1 and path in lines[0] and text in lines[0]):
        return fail(f"expected exit 2 and one line naming {path} and '{text}'; got {run.returncode}:\n{run.stderr}")
    try:
        doc = json.loads(run.stdout) if run.stdout.strip() else {}
    except json.JSONDecodeError:
        return fail(f"stdout is not a JSON document:\n{run.stdout[:2000]}")
    if kind in DAMAGE_AFTER_EVENTS:
        if not doc.get("verdict", {}).get("class"):
            return fail(f"no report of the events before the damage:\n{run.stdout[:2000]}")
    elif "verdict" in doc or doc.get("traces"):
        return fail(f"a report for a file that holds no trace:\n{run.stdout[:2000]}")
    return 0


def check_commands(gpuscope, gen, workdir, workload):
    path = generate(gen, workload, os.path.join(workdir, workload + ".pt.trace.json"), [])
    timeline, page = os.path.join(workdir, "timeline.json"), os.path.join(workdir, "report.html")
    for args in (["info", path], ["export", "--format", "chrome", "-o", timeline, path],
                 ["report", "-o", page, path]):
        run = subprocess.run([gpuscope] + args, capture_output=True, text=True, timeout=TIMEOUT)
        if run.returncode != 0:
            return fail(f"gpuscope {' '.join(args)}: exit {run.returncode}\n{run.stderr}")
        if args[0] == "info" and "kineto" not in run.stdout.lower():
            return fail(f"info does not say the trace was imported from Kineto:\n{run.stdout}")
    with open(timeline) as f:
        events = json.load(f)
    events = events["traceEvents"] if isinstance(events, dict) else events
    if not any(e.get("ph") == "X" for e in events):
        return fail("the exported timeline has no spans")
    with open(page) as f:
        if "<html" not in f.read(4096).lower():
            return fail("the report is not an HTML page")
    return check_steps_as_requests(gpuscope, path)


def check_steps_as_requests(gpuscope, path):
    """--requests 'ProfilerStep#*': every profiler step is a request, its
    nearest-rank quantiles those of the steps' own durations in the file,
    and its device time that of the kernels it launched."""
    with open(path) as f:
        doc = json.load(f)
    steps = sorted(round(float(e["dur"]) * 1000) for e in doc["traceEvents"]
                   if str(e.get("name", "")).startswith("ProfilerStep#") and e.get("ph") == "X")
    run = subprocess.run([gpuscope, "analyze", "--json", "--requests", "ProfilerStep#*", "--tail", "50", path],
                         capture_output=True, text=True, timeout=TIMEOUT)
    if run.returncode != 0:
        return fail(f"analyze --requests 'ProfilerStep#*': exit {run.returncode}\n{run.stderr}")
    requests = json.loads(run.stdout)["requests"]
    if requests["count"] != len(steps) or not steps:
        return fail(f"{requests['count']} requests for {len(steps)} profiler steps")
    for q in requests["quantiles"]:
        rank = max(1, math.ceil(q["quantile"] * len(steps)))
        if abs(q["seconds"] - steps[rank - 1] / 1e9) > 2e-9:
            return fail(f"p{q['quantile'] * 100:g} is {q['seconds']} s; the steps' nearest rank is {steps[rank - 1]} ns")
    # Every kernel of this workload runs inside a step, and the steps are
    # alike: the device time per request is the kernels' total over the steps.
    kernel_s = sum(float(e["dur"]) for e in doc["traceEvents"] if e.get("cat") == "kernel") / 1e6
    device = requests["median"]["device_s"]
    if device is None or abs(device["kernels"] - kernel_s / len(steps)) > 0.01 * kernel_s / len(steps):
        return fail(f"device kernel time per request {device}, expected {kernel_s / len(steps):.6f} s")
    return 0


def main(argv):
    gpuscope, gen, workdir, mode = argv[1:5]
    rest = argv[5:]
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    if mode == "verdict":
        return check_verdict(gpuscope, gen, workdir, rest[0], rest[1], rest[2:])
    if mode == "ranks":
        return check_ranks(gpuscope, gen, workdir, rest[0], rest[1], rest[2:])
    if mode == "error":
        return check_error(gpuscope, gen, workdir, rest[0], rest[1])
    if mode == "commands":
        return check_commands(gpuscope, gen, workdir, rest[0])
    return fail(f"unknown mode {mode}")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
