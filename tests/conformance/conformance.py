#!/usr/bin/env python3
"""Runs one conformance program plain and under `gpuscope run`, and checks
that gpuscope changed nothing and recorded what the program did.

  conformance.py --program NAME --corpus DIR --gpuscope CLI --work DIR
                 [--simgpu LIBDIR] [--static] [--asan-runtime LIB] [--timeout S]

Checks (tests/conformance/README.md):
  - neither run crashed; both exit with the same status;
  - both print the same stdout once timings are masked (TIMING below);
  - the trace is complete (an end record with that exit status, nothing dropped);
  - the trace holds exactly the calls, copies, memsets, launches, syncs and
    allocations expectations.py derives from the program's own parameters.
With --static the program is NAME_static (nvcc's default static cudart): it
runs with no driver at all (no simgpu on the library path) unless --gpu, and
its trace must name the failed driver load.
Standard library only: it also runs from the bundle on a GPU node.
"""
import argparse
import collections
import csv
import difflib
import io
import os
import re
import shutil
import struct
import subprocess
import sys

import expectations

# A printed timing: a number followed (optionally after one space) by a unit
# of time, of a rate ("GB/s", "Gflop/s", ".../s"), clock ticks, or "polls"
# (how often a program polled while the GPU worked). Only these are masked;
# every other character of stdout must be the same.
TIMING = re.compile(
    r"(?<![\w.])[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
    r"(?=\s?(?:ns|us|µs|ms|msec|usec|s|sec|secs|seconds|clocks|cycles|polls|[A-Za-z]*/s)\b)")

# Variables that would change what a run sees; the harness sets its own.
SCRUBBED = ("LD_PRELOAD", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "SIMGPU_NODE", "SIMGPU_SHARED_ID",
            "CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH")


class Failure(Exception):
    pass


def mask_timings(text):
    return TIMING.sub("<t>", text)


def dynamic_functions(path, defined):
    """The functions an ELF file exports (`defined`) or imports, from its
    .dynsym: which CUDA calls a libgpuscope.so intercepts at all, and which
    ones a program can make."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise Failure(f"{path}: not a 64-bit ELF file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names = set()
    for _, kind, _, _, offset, size, link, _, _, _ in sections:
        if kind != 11:  # SHT_DYNSYM
            continue
        strings = sections[link][4]
        for sym in range(offset, offset + size, 24):
            name, info, _, shndx, _, _ = struct.unpack_from("<IBBHQQ", data, sym)
            if (shndx != 0) == defined and info & 0xF == 2:
                start = strings + name
                names.add(data[start:data.index(b"\0", start)].decode())
    return names


def run(cmd, env, timeout):
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Failure(f"timed out after {timeout} s: {' '.join(cmd)}")
    out, err = p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
    if p.returncode < 0:
        raise Failure(f"killed by signal {-p.returncode}: {' '.join(cmd)}\n{err}")
    for marker in ("AddressSanitizer", "LeakSanitizer", "runtime error:"):
        if marker in err:
            raise Failure(f"sanitizer report from {' '.join(cmd)}:\n{err}")
    return p.returncode, out, err


def compare_stdout(plain, traced):
    a, b = mask_timings(plain).splitlines(), mask_timings(traced).splitlines()
    if a != b:
        diff = "\n".join(difflib.unified_diff(a, b, "plain", "traced", lineterm=""))
        raise Failure(f"stdout differs under gpuscope (timings masked):\n{diff}")
    return len(TIMING.findall(plain))


def the_trace(work):
    traces = sorted(f for f in os.listdir(work) if f.endswith(".gpuscope"))
    if len(traces) != 1:
        raise Failure(f"expected one trace in {work}, found {traces}")
    return os.path.join(work, traces[0])


def info_of(gpuscope, trace, timeout):
    status, out, err = run([gpuscope, "info", trace], os.environ.copy(), timeout)
    if status != 0:
        raise Failure(f"gpuscope info {trace} failed ({status}):\n{err}")
    return out


def check_end(info, status):
    end = re.search(r"^end:\s+(.*)$", info, re.M)
    if not end:
        raise Failure("gpuscope info printed no end line")
    found = re.search(r"exit status (-?\d+)", end.group(1))
    if not found or int(found.group(1)) != status:
        raise Failure(f"the trace's end record says '{end.group(1)}'; the program exited with {status}")
    dropped = re.search(r"^dropped:\s+(.*)$", info, re.M)
    if not dropped or dropped.group(1) != "none":
        raise Failure(f"events were dropped ({dropped.group(1) if dropped else '?'}): counts cannot be compared")


class Tally:
    """The host-side records of one trace, keyed as expectations.py keys them."""

    def __init__(self, csv_text, driver_api, library_calls):
        self.calls = collections.Counter()
        self.failures = collections.defaultdict(collections.Counter)
        self.captured = collections.Counter()  # calls whose work went into a graph being captured
        self.graphs = collections.Counter()  # graph launches and what they ran
        self.kinds = {k: collections.Counter() for k in ("copies", "memsets", "syncs", "allocs", "kernels")}
        self.bytes = {k: collections.Counter() for k in ("copies", "memsets", "allocs")}
        # Driver calls at the outermost level that are not among the driver
        # functions the program calls itself (`driver_api`, a set): made by
        # the runtime under one of its functions that gpuscope does not
        # intercept, or by a library (library_calls).
        self.driver = collections.Counter()
        call_of = {}
        rows = list(csv.DictReader(io.StringIO(csv_text)))
        for r in rows:
            if r["kind"] != "api_call" or r["source"] != "host" or not r["detail"].startswith("depth 0"):
                continue
            name, n = r["name"], calls_in(r)
            call_of[r["correlation"]] = name
            if is_driver_call(name) and name not in driver_api:
                self.driver[name] += n
                continue
            self.calls[name] += n
            if "captured into a graph" in r["detail"]:
                self.captured[name] += n
            if r["error"] not in ("", "0"):
                self.failures[name][int(r["error"])] += n
        for r in rows:
            if r["source"] == "host" and r["kind"] == "graph_launch":
                self.add_graph_launch(r["detail"])
            if r["source"] != "host" or r["kind"] not in ("copy", "memset", "sync", "alloc", "kernel"):
                continue
            if library_calls and is_driver_call(call_of.get(r["correlation"], "")):
                continue
            self.add_typed(r)

    def add_typed(self, r):
        kind, detail = r["kind"], r["detail"]
        if kind == "copy":
            m = re.match(r"(\w+) -> (\w+)(, async)?", detail)
            src, dst = device_side(m.group(1)), device_side(m.group(2))
            key = f"{r['copy_kind']} {src}->{dst}{' async' if m.group(3) else ''}"
            key, category = key + (" prefetch" if ", prefetch" in detail else ""), "copies"
        elif kind == "memset":
            key, category = device_side(detail.split(", ")[-1]), "memsets"
        elif kind == "sync":
            key, category = r["name"], "syncs"
        elif kind == "alloc":
            m = re.match(r"(?:address|handle) \S+, (\w+)(, stream-ordered)?(, physical)?", detail)
            # A free names no memory kind (cudaFree takes any device pointer):
            # frees are compared by count and bytes.
            what = "" if r["name"] in ("Free", "Unregister") else " " + m.group(1)
            key = f"{r['name']}{what}{' stream-ordered' if m.group(2) else ''}{' physical' if m.group(3) else ''}"
            category = "allocs"
        else:
            key, category = r["name"], "kernels"
        self.kinds[category][key] += calls_in(r)
        if category in self.bytes:
            self.bytes[category][key] += int(r["bytes"] or 0)


    def add_graph_launch(self, detail):
        """A graph launch and the nodes it ran, as the trace counted them when
        the graph was instantiated."""
        self.graphs["launches"] += 1
        if "contents unknown" in detail:
            self.graphs["launches of unknown graphs"] += 1
        for n, what in re.findall(r"(\d+) (kernels|copies|memsets|other nodes)", detail):
            self.graphs[what] += int(n)


def calls_in(r):
    """How many calls a row stands for: consecutive "not ready" polls of one
    query are one record (the `calls` column; docs/interception.md)."""
    return int(r.get("calls") or 1)


def device_side(kind):
    """Device memory is device memory on a copy or memset, whichever
    allocator it came from (cudaMalloc, a pool): the program names only
    "device" (cudaMemcpyDeviceToHost). Host kinds stay exact: pageable or
    pinned is evidence the analyzer weighs."""
    return "Device" if kind in ("Pool", "DeviceStatic") else kind


def is_driver_call(name):
    return name.startswith("cu") and not name.startswith("cuda")


def kernel_matches(mangled, name):
    """`name` (an identifier) is the kernel's own name inside its mangled
    (Itanium ABI: length-prefixed) or plain name."""
    return mangled == name or re.search(rf"(?<!\d){len(name)}{re.escape(name)}", mangled) is not None


def compare(expect, tally, hooked):
    """Every difference between the expectation and the trace, and the calls
    the program made that this libgpuscope.so does not intercept at all."""
    problems, not_hooked, want_calls = [], [], {}
    for name, n in expect.calls.items():
        if name in hooked:
            want_calls[name] = n
        else:
            not_hooked.append(f"{name} x{n if isinstance(n, int) else '%d-%d' % n}")
    for name in sorted(set(want_calls) | set(tally.calls)):
        want, got = want_calls.get(name, 0), tally.calls.get(name, 0)
        lo, hi = want if isinstance(want, tuple) else (want, want)
        if not lo <= got <= hi:
            problems.append(f"calls {name}: expected {want}, trace has {got}")
    for name in sorted((set(expect.failures) | set(tally.failures)) & hooked):
        want, got = dict(expect.failures.get(name, {})), dict(tally.failures.get(name, {}))
        if want != got:
            problems.append(f"failed calls {name}: expected {want or 'none'} (error: count), trace has {got or 'none'}")
    for name in sorted((set(expect.captured) | set(tally.captured)) & hooked):
        if expect.captured.get(name, 0) != tally.captured[name]:
            problems.append(f"calls {name} captured into a graph: expected {expect.captured.get(name, 0)}, "
                            f"trace has {tally.captured[name]}")
    for category in ("copies", "memsets", "allocs"):
        want = getattr(expect, category)
        for key in sorted(set(want) | set(tally.kinds[category])):
            w = tuple(want.get(key, (0, 0)))
            g = (tally.kinds[category][key], tally.bytes[category][key])
            if w != g:
                problems.append(f"{category} '{key}': expected {w[0]} of {w[1]} bytes, trace has {g[0]} of {g[1]} bytes")
    for category, want, got in (("syncs", expect.syncs, tally.kinds["syncs"]), ("graph launches", expect.graphs, tally.graphs)):
        for key in sorted(set(want) | set(got)):
            if want.get(key, 0) != got[key]:
                problems.append(f"{category} {key}: expected {want.get(key, 0)}, trace has {got[key]}")
    problems += compare_kernels(expect.kernels, tally.kinds["kernels"])
    return problems, not_hooked


def compare_kernels(want, got):
    problems, counted = [], collections.Counter()
    for mangled, n in got.items():
        owner = next((name for name in want if name and kernel_matches(mangled, name)), None)
        if owner is None and "" not in want:
            problems.append(f"kernels: {n} launches of {mangled}, which the program never launched")
        counted[owner or ""] += n
    for name, n in want.items():
        if counted[name] != n:
            problems.append(f"kernels {name or '(any)'}: expected {n} launches, trace has {counted[name]}")
    return problems


def environment(args, static):
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED and not k.startswith("GPUSCOPE_")}
    if args.simgpu and not static:
        env["LD_LIBRARY_PATH"] = args.simgpu
    elif args.gpu and "LD_LIBRARY_PATH" in os.environ:
        env["LD_LIBRARY_PATH"] = os.environ["LD_LIBRARY_PATH"]
    return env


def traced_environment(args, env):
    env = dict(env)
    if args.asan_runtime:
        # The ASan runtime must be loaded before the program's libraries;
        # `gpuscope run` puts its own library first in LD_PRELOAD, which is
        # harmless (libgpuscope.so defines no allocator). Leaks are the
        # program's and simgpu's business, not this test's.
        env["LD_PRELOAD"] = args.asan_runtime
        env["ASAN_OPTIONS"] = "verify_asan_link_order=0:detect_leaks=0:abort_on_error=0"
        env["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"
    return env


def arguments():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--list", action="store_true", help="print the programs' names and exit")
    ap.add_argument("--program")
    ap.add_argument("--corpus", help="directory of the built programs")
    ap.add_argument("--gpuscope", help="the gpuscope CLI")
    ap.add_argument("--work", help="scratch directory (emptied first)")
    ap.add_argument("--simgpu", help="simgpu's library directory: run on simgpu")
    ap.add_argument("--nodes", default=os.path.join(os.path.dirname(__file__), "../../samples/simgpu/nodes"))
    ap.add_argument("--gpu", action="store_true", help="run on the real GPU with the caller's LD_LIBRARY_PATH")
    ap.add_argument("--static", action="store_true", help="the static-cudart build, with no driver unless --gpu")
    ap.add_argument("--asan-runtime", help="libasan.so to preload (libgpuscope.so built with ASan)")
    ap.add_argument("--timeout", type=float, default=120)
    args = ap.parse_args()
    missing = [f"--{a}" for a in ("program", "corpus", "gpuscope", "work") if getattr(args, a) is None]
    if missing and not args.list:
        ap.error(f"{', '.join(missing)} required")
    return args


def conform(args, program):
    """Both runs and every check; returns the summary of what passed."""
    exe = os.path.join(args.corpus, args.program + ("_static" if args.static else ""))
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    env = environment(args, args.static)
    if program.node and args.simgpu and not args.static:
        env["SIMGPU_NODE"] = os.path.join(args.nodes, program.node)
    cmd = [exe] + program.args
    status, out, err = run(cmd, env, args.timeout)
    t_status, t_out, t_err = run([args.gpuscope, "run", "-q", "-o", args.work + "/", "--"] + cmd,
                                 traced_environment(args, env), args.timeout)
    if t_status != status:
        raise Failure(f"exit status {status} plain, {t_status} under gpuscope\nplain stderr:\n{err}\n"
                      f"traced stderr:\n{t_err}")
    masked = compare_stdout(out, t_out)
    trace = the_trace(args.work)
    info = info_of(args.gpuscope, trace, args.timeout)
    check_end(info, status)
    if not args.static:
        report = check_counts(args, program, exe, trace, status, t_out, err)
    else:
        report = check_no_driver(info, status, err, t_err) if not args.gpu else "ran on the GPU"
    return f"exit {status} plain and traced, stdout identical with {masked} timings masked; {report}"


def main():
    args = arguments()
    if args.list:
        print("\n".join(expectations.PROGRAMS))
        return 0
    label = args.program
    if args.static:
        label += " (static cudart" + (")" if args.gpu else ", no driver)")
    try:
        summary = conform(args, expectations.PROGRAMS[args.program])
    except Failure as f:
        print(f"conformance {label}: FAILED\n{f}")
        return 1
    print(f"conformance {label}: passed ({summary})")
    return 0


def check_no_driver(info, status, err, t_err):
    """Without a driver the static runtime fails its first call: the trace
    must say why (the failed libcuda.so.1 load), and the program must print
    the same error as without gpuscope."""
    if status == 0:
        raise Failure("the static-cudart program succeeded with no driver on the library path")
    if not re.search(r"LOAD FAILED libcuda\.so\.1", info):
        raise Failure(f"the trace does not name the failed load of libcuda.so.1:\n{info}")
    if not re.search(r"^driver:\s+libcuda\.so\.1 NOT LOADABLE", info, re.M):
        raise Failure(f"the trace's probe does not say that libcuda.so.1 cannot be loaded:\n{info}")
    missing = [line for line in err.splitlines() if line not in t_err.splitlines()]
    if missing:
        raise Failure("stderr lines of the plain run missing under gpuscope:\n" + "\n".join(missing))
    return "the trace names the failed libcuda.so.1 load"


def check_counts(args, program, exe, trace, status, out, err):
    """`out` is the traced run's stdout: a count the program printed about
    itself (masked when compared with the plain run) is the traced run's."""
    outcome = expectations.Outcome(status, out, program.args, simulated=args.simgpu is not None)
    try:
        expect = program.expect(outcome)
    except (AssertionError, KeyError) as e:
        raise Failure(f"{e}\nplain stdout:\n{out}\nplain stderr:\n{err}")
    status_, csv_text, err = run([args.gpuscope, "export", "--format", "csv", "--no-symbols", "-o", "-", trace],
                                 os.environ.copy(), args.timeout)
    if status_ != 0:
        raise Failure(f"gpuscope export failed ({status_}):\n{err}")
    driver_api = {name for name in expect.calls if is_driver_call(name)}
    tally = Tally(csv_text, driver_api, expect.library_calls)
    check_imports(expect, [exe] + [os.path.join(args.corpus, lib.format(exe=os.path.basename(exe)))
                                   for lib in program.libraries])
    library = library_path(args.gpuscope)
    problems, not_hooked = compare(expect, tally, dynamic_functions(library, defined=True))
    if problems:
        raise Failure("the trace does not hold what the program did:\n  " + "\n  ".join(problems))
    report = f"{sum(tally.calls.values())} calls"
    for category in ("copies", "memsets", "kernels", "syncs", "allocs"):
        report += f", {sum(tally.kinds[category].values())} {category}"
    if tally.graphs:
        report += f", {tally.graphs['launches']} graph launches running {tally.graphs['kernels']} kernels"
    if not_hooked:
        report += "; not intercepted by this libgpuscope.so: " + ", ".join(not_hooked)
    if tally.driver:
        report += "; driver calls made for the program by the runtime or a library (not compared): " + \
            ", ".join(f"{name} x{n}" for name, n in sorted(tally.driver.items()))
    return report


def check_imports(expect, binaries):
    """An expectation can only name functions the program's binaries import:
    this catches a miscounted expectation even for calls gpuscope does not
    intercept."""
    imported = set()
    for binary in binaries:
        imported |= dynamic_functions(binary, defined=False)
    never = sorted(name for name in expect.calls if name not in imported | expect.entry_points)
    if never:
        raise Failure(f"expectations.py names calls the program never imports: {', '.join(never)}")


def library_path(gpuscope):
    """The libgpuscope.so `gpuscope run` preloads (analyzer/cli/locate.cpp)."""
    if os.environ.get("GPUSCOPE_LIBRARY"):
        return os.environ["GPUSCOPE_LIBRARY"]
    here = os.path.dirname(os.path.realpath(gpuscope))
    for candidate in ("../lib/libgpuscope.so", "../lib64/libgpuscope.so", "libgpuscope.so"):
        path = os.path.normpath(os.path.join(here, candidate))
        if os.path.exists(path):
            return path
    raise Failure(f"no libgpuscope.so next to {gpuscope}")


if __name__ == "__main__":
    sys.exit(main())
