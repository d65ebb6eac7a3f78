#!/usr/bin/env python3
"""Verdicts on traces recorded on real GPUs (docs/gpu-validation.md): each
directory holds the traces of one run and expected.json, which says per
trace the verdict class it must get ("class") or must not ("not_class"),
the findings that must fail ("fail") or must be absent ("absent"),
text a failing finding's title must hold ("title_has"), and figures of the
analysis's "metrics" that must be exactly so ("metrics": counts the
program's own source fixes, such as its allocations). The traces are the
project's own recordings, kept so that a rule change is checked against
real hardware's numbers, not only simgpu's model.

Usage: check_verdicts.py GPUSCOPE DIR..."""
import json
import os
import subprocess
import sys


def analyze(gpuscope, path):
    if not os.path.isfile(path):
        return None, "missing (a trace expected.json names is not in the tree)"
    r = subprocess.run([gpuscope, "analyze", "--json", path], capture_output=True, text=True, timeout=300)
    if r.returncode not in (0, 1, 2):
        return None, f"gpuscope analyze exited {r.returncode}: {r.stderr.strip()[:300]}"
    try:
        doc = json.loads(r.stdout)
    except json.JSONDecodeError as e:
        return None, f"not JSON ({e}): {r.stderr.strip()[:300]}"
    if "verdict" not in doc:
        return None, f"no verdict in the analysis: {r.stderr.strip()[:300]}"
    return doc, None


def problems(doc, want):
    got = doc["verdict"]["class"]
    failing = {f["id"]: f for f in doc["findings"] if f["severity"] == "fail"}
    ids = {f["id"] for f in doc["findings"]}
    out = []
    if "class" in want and got != want["class"]:
        out.append(f"verdict {got}, expected {want['class']}")
    if got in want.get("not_class", []):
        out.append(f"verdict {got}, which it must not be")
    out += [f"finding {i} does not fail" for i in want.get("fail", []) if i not in failing]
    out += [f"finding {i} is present" for i in want.get("absent", []) if i in ids]
    for name, value in want.get("metrics", {}).items():
        if doc["metrics"].get(name) != value:
            out.append(f"metrics.{name} is {doc['metrics'].get(name)}, expected {value}")
    text = want.get("title_has")
    if text and not any(text in f["title"] for f in failing.values()):
        out.append(f"no failing finding's title names {text!r}")
    return out


def main():
    gpuscope, dirs = sys.argv[1], sys.argv[2:]
    bad = checked = 0
    for d in dirs:
        with open(os.path.join(d, "expected.json")) as f:
            expected = json.load(f)["traces"]
        for name, want in sorted(expected.items()):
            doc, error = analyze(gpuscope, os.path.join(d, name))
            found = [error] if error else problems(doc, want)
            checked += 1
            verdict = doc["verdict"]["class"] if doc else "-"
            print(f"{'ok  ' if not found else 'FAIL'} {os.path.basename(d)}/{name}: {verdict}")
            for p in found:
                print(f"       {p}")
            bad += bool(found)
    print(f"{checked - bad} of {checked} real-GPU traces as expected")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
