#!/usr/bin/env python3
"""The host range that held the GPU idle, on a generated input-bound Kineto
trace, whole and scoped to one profiler step (--range): the DataLoader is
named, and what it held is measured inside the analyzed time only (a
scoped analysis once counted the whole trace's idle time against one
step's wall time: a share of 1626 %); and a loop that is nothing but its
DataLoader, whose range covers nearly the whole run, is still CPU-bound
naming it.

Usage: check_range_idle.py GPUSCOPE GEN_KINETO WORKDIR"""
import json
import os
import subprocess
import sys


def analyze(gpuscope, trace, *extra):
    r = subprocess.run([gpuscope, "analyze", "--json", trace, *extra], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        sys.exit(f"gpuscope analyze {' '.join(extra)} exited {r.returncode}: {r.stderr}")
    return json.loads(r.stdout)


def check(doc, what):
    b = doc["breakdown"]
    ranges = b["idle_under_ranges"]
    if not ranges or "DataLoader" not in ranges[0]["name"]:
        sys.exit(f"{what}: the DataLoader is not the top holder of GPU idle time: {ranges}")
    wall = b["wall_s"]
    for r in ranges:
        if r["idle_s"] > wall * 1.001 or not 0 <= r["share_of_idle"] <= 1:
            sys.exit(f"{what}: {r['name']} holds {r['idle_s']} s of idle in {wall} s analyzed")
    for f in doc["findings"]:
        if f["share"] > 1.001:
            sys.exit(f"{what}: finding {f['id']} explains {f['share']:.0%} of the time")
    return ranges[0]


def main():
    gpuscope, gen, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    trace = os.path.join(work, "input_bound.json")
    subprocess.run([sys.executable, gen, "input_bound", trace], check=True)
    whole = check(analyze(gpuscope, trace), "whole trace")
    step = check(analyze(gpuscope, trace, "--range", "ProfilerStep#3"), "--range ProfilerStep#3")
    if not step["idle_s"] < whole["idle_s"] / 10:
        sys.exit(f"one step of 20 holds {step['idle_s']} s of idle, the whole trace {whole['idle_s']} s")
    print(f"whole: {whole['idle_s']:.3f} s; one step: {step['idle_s']:.3f} s")
    # A loop that is nothing but its DataLoader: the range covers nearly the
    # whole run, and is still the stage the GPU waits for.
    only = os.path.join(work, "input_only.json")
    subprocess.run([sys.executable, gen, "input_only", only], check=True)
    doc = analyze(gpuscope, only)
    holder = check(doc, "input_only")
    if doc["verdict"]["class"] != "cpu_bound":
        sys.exit(f"input_only: verdict {doc['verdict']}, expected cpu_bound")
    if not any("DataLoader" in f["title"] for f in doc["findings"] if f["id"].startswith("cpu.")):
        sys.exit(f"input_only: no CPU-bound finding names the DataLoader: {[f['title'] for f in doc['findings']]}")
    print(f"input_only: {holder['name']} holds {holder['share_of_idle']:.0%} of the idle time")


if __name__ == "__main__":
    main()
