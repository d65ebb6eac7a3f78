#!/usr/bin/env python3
"""End-to-end check of Python frames in gpuscope's call stacks.

Runs cuda_workload.py MODE under `gpuscope run` with one CPython on simgpu,
then reads the trace back two ways: `gpuscope export --format csv` (every
call's headline call site) and `gpuscope analyze --json` (the findings'
call sites with their frames). The expected lines come from the
workload's `# site:` comments.

usage: check_python_stacks.py GPUSCOPE SIMGPU_LIB_DIR NATIVE_LIBRARY PYTHON MODE WORK_DIR
Exit 77 (ctest's skip) when PYTHON is not installed.
"""
import csv
import json
import os
import pathlib
import re
import subprocess
import sys

WORKLOAD = pathlib.Path(__file__).with_name("cuda_workload.py")
SKIP = 77

# mode -> the calls whose every headline is checked (CUDA function, site,
# headline function), and a finding's call site (CUDA function, site, the
# functions outwards from the headline that its frames must show in order;
# native ones from libpykernels.so among them). The work is queued from
# native code (pageable copies, then kernels), so the copies' finding cites
# native frames, then Python's.
EXPECTED = {
    "copies": (("cudaMemcpy", "copy", "copy_batches"),
               ("cudaMemcpy", "copy", ["copy_batches", "copies", "<module>"])),
    "sync": (("cudaDeviceSynchronize", "sync", "wait_for_device"),
             ("cudaMemcpy", "queue", ["training_step", "sync", "<module>"])),
    "threads": (("cudaMemcpy", "thread", "worker"),
                ("cudaMemcpy", "thread", ["worker"])),
    "callback": (("cudaDeviceSynchronize", "callback", "on_event"),
                 ("cudaMemcpy", "callback_queue", ["on_event", "run_callback", "callback", "<module>"])),
}
NATIVE = {"queue_work", "run_callback"}  # libpykernels.so's functions


def site_lines():
    lines = {}
    for number, text in enumerate(WORKLOAD.read_text().splitlines(), start=1):
        if m := re.search(r"# site: (\w+)", text):
            lines[m.group(1)] = number
    return lines


def run(command, **kwargs):
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        sys.exit(f"FAIL: {' '.join(map(str, command))} exited {result.returncode}\n{result.stdout}\n{result.stderr}")
    return result.stdout


def trace_of(gpuscope, simgpu, python, mode, work, extra):
    out_dir = pathlib.Path(work) / mode
    if out_dir.exists():
        for f in out_dir.iterdir():
            f.unlink()
    env = dict(os.environ, LD_LIBRARY_PATH=simgpu)
    run([gpuscope, "run", "-q", "-o", f"{out_dir}/", "--", python, "-I", str(WORKLOAD), mode, *extra], env=env)
    traces = sorted(out_dir.glob("*.gpuscope"))
    if len(traces) != 1:
        sys.exit(f"FAIL: expected one trace in {out_dir}, found {traces}")
    return traces[0]


def short(name):
    """A qualified name's last part: 3.11+ say "callback.<locals>.on_event", older ones "on_event"."""
    return name.split(" ")[0].rsplit(".", 1)[-1] + name[len(name.split(" ")[0]):]


def check_headlines(gpuscope, trace, function, want):
    table = run([gpuscope, "export", "--format", "csv", "-o", "-", str(trace)])
    sites = {short(row["call_site"]) for row in csv.DictReader(table.splitlines()) if row["name"] == function}
    if sites != {want}:
        sys.exit(f"FAIL: {function} calls headlined {sorted(sites)}, expected only {want!r}")


def check_finding(gpuscope, trace, function, line, outwards):
    report = json.loads(run([gpuscope, "analyze", "--json", str(trace)]))
    for finding in report["findings"]:
        for site in finding["call_sites"]:
            names = [short(f["function"]) for f in site["frames"]]
            if site["function"] != function or outwards[0] not in names:
                continue
            first = names.index(outwards[0])
            head = site["frames"][first]
            if not (head.get("python") and head.get("user") and head["line"] == line
                    and head["file"].endswith(WORKLOAD.name)):
                sys.exit(f"FAIL: finding {finding['id']}: headline frame {head}, expected {WORKLOAD.name}:{line}")
            rest = names[first:]
            at = [rest.index(n) if n in rest else -1 for n in outwards]
            if -1 in at or at != sorted(at):
                sys.exit(f"FAIL: finding {finding['id']}: frames {rest}, expected {outwards} in that order")
            return finding["id"], site["frames"]
    sys.exit(f"FAIL: no finding cites {function} from {outwards[0]}; findings: "
             f"{[(f['id'], [s['function'] for s in f['call_sites']]) for f in report['findings']]}")


def check_unsupported(gpuscope, trace, python):
    """An interpreter without a known layout: native stacks, and the coverage says why."""
    report = json.loads(run([gpuscope, "analyze", "--json", str(trace)]))
    said = [line for line in report["coverage"] if "no Python frames" in line]
    if len(said) != 1 or "no frame layout known" not in said[0]:
        sys.exit(f"FAIL: coverage {report['coverage']} does not say why there are no Python frames")
    # The recorded call sites, not the findings': whether the copies make a finding depends on the machine's
    # load (CI once saw none), while every recorded copy has a stack.
    table = run([gpuscope, "export", "--format", "csv", "-o", "-", str(trace)])
    sites = [row["call_site"] for row in csv.DictReader(table.splitlines()) if row["name"] == "cudaMemcpy"]
    if not sites or any(not site or ".py:" in site for site in sites):
        sys.exit(f"FAIL: expected native call sites only, got {sorted(set(sites))[:6]}")
    print(f"ok: {python}: native frames only; coverage: {said[0]}")
    return 0


def main():
    gpuscope, simgpu, native, python, mode, work = sys.argv[1:]
    if not os.access(python, os.X_OK):
        print(f"SKIP: {python} is not installed")
        return SKIP
    if mode == "unsupported":
        return check_unsupported(gpuscope, trace_of(gpuscope, simgpu, python, "copies", work, [native]), python)
    (calls, site, head), (cited, cited_site, outwards) = EXPECTED[mode]
    lines = site_lines()
    trace = trace_of(gpuscope, simgpu, python, mode, work, [native])
    check_headlines(gpuscope, trace, calls, f"{head} ({WORKLOAD.name}:{lines[site]})")
    finding, frames = check_finding(gpuscope, trace, cited, lines[cited_site], outwards)
    for frame in frames:  # native code between Python frames shows as native frames
        if short(frame["function"]) in NATIVE and (frame.get("python") or not frame["module"].startswith("libpykernels")):
            sys.exit(f"FAIL: native frame shown as {frame}")
    if any(n in NATIVE for n in outwards) or mode in ("sync", "callback"):
        names = [short(f["function"]) for f in frames]
        if "queue_work" not in names or names.index("queue_work") > names.index(outwards[0]):
            sys.exit(f"FAIL: the copy's frames {names} lack the native queue_work inside {outwards[0]}")
    print(f"ok: {mode} under {python}: {calls} headlined at {WORKLOAD.name}:{lines[site]}; "
          f"{cited} at {WORKLOAD.name}:{lines[cited_site]} in finding {finding}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
