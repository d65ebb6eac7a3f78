#!/usr/bin/env python3
"""gpuscope doctor on one node, in all three outputs (docs/doctor.md).

Runs `gpuscope doctor` as text (and -v), --json and --format prometheus on
a simgpu node description (or on the real CUDA toolkit without a driver)
and checks, in each output, that the checks named in EXPECT are in the
state expected and every other check passed (or, without a driver, could
not run); that the JSON validates against docs/doctor.schema.json; that the
text is sorted by severity; and that the exit status is 1 for a failure,
3 for warnings only, 0 otherwise.

Usage: check_doctor.py CASE GPUSCOPE SIMGPU_LIB_DIR NODES_DIR SCHEMA CUDA_LIB_DIR
"""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

import jsonschema

ALL_CHECKS = ["driver", "devices", "cuda_runtime", "kernel_log", "host_pressure", "clocksource", "mps", "baseline", "pcie_link", "clocks", "power", "persistence_mode", "ecc",
              "row_remapping", "mig", "tenancy", "topology", "nvlink", "canary"]
NODE_CHECKS = {"driver", "devices", "cuda_runtime", "kernel_log", "host_pressure", "clocksource", "mps", "baseline"}
# Node checks that read the host, not NVML: they run without a driver too.
HOST_CHECKS = {"kernel_log", "host_pressure", "clocksource", "mps"}
FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")

# case: node file (None: the built-in default), {check: (state, text in its summary)}, options
CASES = {
    "healthy": (None, {}, {}),
    "degraded_link": ("pcie-gen3-x8.json", {"pcie_link": ("fail", "link at Gen3 x8, capable of Gen5 x16")}, {}),
    "thermal_throttle": ("throttled.json", {"clocks": ("fail", "hardware thermal slowdown")}, {}),
    "power_cap": ("power-capped.json", {"power": ("warn", "power limit 400 W, below the board's default 700 W"),
                                         "clocks": ("warn", "software power cap")}, {}),
    "ecc_errors": ("ecc-errors.json", {"ecc": ("fail", "2 uncorrected ECC errors since the driver loaded"),
                                       "row_remapping": ("fail", "a row remap is pending")}, {}),
    "mig_enabled": ("mig-enabled.json", {"mig": ("warn", "MIG is enabled with 3 MIG devices; this process lands on "
                                                         "MIG 3g.71gb (GPU instance 2, compute instance 0): 60 SMs")}, {}),
    # CUDA_VISIBLE_DEVICES names the MIG device: that one is where the process lands.
    "mig_device_chosen": ("mig-enabled.json", {"mig": ("warn", "this process lands on MIG 1g.18gb (GPU instance 10, "
                                                               "compute instance 0): 16 SMs, 16.5 GiB"),
                                               "devices": ("pass", "MIG device MIG-5a1c0de0-0000-4000-9000-0000000000a0 "
                                                                   "of GPU 0 visible to CUDA")},
                          {"env": {"CUDA_VISIBLE_DEVICES": "MIG-5a1c0de0-0000-4000-9000-0000000000a0"}}),
    # An entry after the MIG device that names nothing still warns (CUDA ignores it).
    "mig_device_then_unknown": ("mig-enabled.json", {"mig": ("warn", "this process lands on MIG 1g.18gb (GPU instance "
                                                                     "10"),
                                                     "devices": ("warn", "CUDA_VISIBLE_DEVICES entry 'bogus' names no GPU")},
                                {"env": {"CUDA_VISIBLE_DEVICES": "MIG-5a1c0de0-0000-4000-9000-0000000000a0,bogus"}}),
    "mig_device_unknown": ("mig-enabled.json", {"mig": ("warn", "this process lands on none of them"),
                                                "devices": ("fail", "CUDA_VISIBLE_DEVICES names MIG-deadbeef, which is "
                                                                    "no MIG device of this node: CUDA sees no device")},
                           {"env": {"CUDA_VISIBLE_DEVICES": "MIG-deadbeef"}}),
    "mig_without_devices": ("mig-no-devices.json", {"mig": ("fail", "MIG is enabled but no MIG device exists on this "
                                                                    "GPU")}, {}),
    "nvlink_healthy": ("nvlink.json", {"nvlink": ("pass", "all 18 NVLinks are up")}, {}),
    "nvlink_down": ("nvlink-down.json", {"nvlink": ("warn", "2 of 18 NVLinks down (link 3, 11): GPU-to-GPU bandwidth "
                                                            "is cut by 11%")}, {}),
    "other_tenant": ("shared-gpu.json", {"tenancy": ("warn", "1 other process on this GPU, holding 30720 MiB")}, {}),
    "old_driver": ("old-driver.json", {"cuda_runtime": ("fail", "the driver supports CUDA 12.2, a major version "
                                                                "older than the CUDA runtime 13.0")}, {}),
    # An MPS client on the GPU (NVML's MPS process list) and the control daemon's pipe (options "mps_daemon").
    "mps_in_use": ("mps.json", {"mps": ("warn", "MPS is in use (control daemon at ")}, {"mps_daemon": True}),
    "persistence_off": ("persistence-off.json", {"persistence_mode": ("warn", "persistence mode off")}, {}),
    "missing_device_node": (None, {"devices": ("fail", "nvidia0 is missing")}, {"skip_nodes": ["nvidia0"]}),
    "device_node_unopenable": (None, {"devices": ("fail", "nvidia-uvm cannot be opened although its mode allows it "
                                                          "(Is a directory)")}, {"unopenable_nodes": ["nvidia-uvm"]}),
    "all_devices_hidden": (None, {"devices": ("fail", "no GPU is visible to CUDA: CUDA_VISIBLE_DEVICES= hides all 1")},
                           {"env": {"CUDA_VISIBLE_DEVICES": ""}}),
    "gpu_lost": ("gpu-lost.json", {"driver": ("fail", "counts 2 GPUs but cannot open 1: GPU 1: GPU is lost (15)")}, {}),
    "two_gpus_one_visible": ("two-devices.json", {"devices": ("pass", "1 of 2 GPUs visible to CUDA (CUDA_VISIBLE_DEVICES=1)")},
                             {"env": {"CUDA_VISIBLE_DEVICES": "1"}, "gpus": 2, "skip_nodes": ["nvidia0"]}),
    "kernel_xid": (None, {"kernel_log": ("fail", "Xid 48 on 0000:18:00 (GPU 0, 1x): Double Bit ECC Error")}, {"kernel_log": "kernel-xid.log"}),
    "kernel_aer_corrected": (None, {"kernel_log": ("warn", "2 corrected PCIe AER errors")},
                             {"kernel_log": "kernel-aer-corrected.log"}),
    "kernel_log_unreadable": (None, {"kernel_log": ("not_checked", "no-such.log: No such file or directory")},
                              {"kernel_log": "no-such.log"}),
    # Run as an unprivileged user on a host that restricts the kernel log (needs root to drop to nobody, and
    # kernel.dmesg_restrict=1; skipped elsewhere): /dev/kmsg refuses, and the check says why.
    "kernel_log_not_permitted": (None, {"kernel_log": ("not_checked", "/dev/kmsg: Operation not permitted: reading "
                                                                      "the kernel log needs CAP_SYSLOG")},
                                 {"kernel_log": None, "as_nobody": True}),
    # /dev/kmsg cannot be read (here: --kmsg names no device), so the journal is: a journalctl on PATH that
    # prints a log fixture, or, like an unprivileged user's, nothing but its hint.
    "kernel_log_from_journal": (None, {"kernel_log": ("fail", "Xid 79 on 0000:18:00 (GPU 0, 1x): GPU has fallen off "
                                                              "the bus")},
                                {"kernel_log": None, "kmsg": "no-such-kmsg", "journal": "kernel-xid.log"}),
    "kernel_log_journal_refused": (None, {"kernel_log": ("not_checked", "no-such-kmsg does not exist here (a "
                                                                        "container without it")},
                                   {"kernel_log": None, "kmsg": "no-such-kmsg", "journal": None}),
    "host_cpu_saturated": (None, {"host_pressure": ("fail", "tasks waited for a CPU 72% of the last 10 s")},
                           {"proc_root": "proc-cpu-saturated"}),
    "host_io_wait": (None, {"host_pressure": ("warn", "tasks waited for I/O 24% of the last 10 s")},
                     {"proc_root": "proc-io-wait"}),
    "host_busy_without_psi": (None, {"host_pressure": ("warn", "CPUs 98% busy over the window (no PSI")},
                              {"proc_root": "proc-no-psi-busy"}),
    "host_unreadable": (None, {"host_pressure": ("not_checked", "no-such-proc/stat (two samples) nor")},
                        {"proc_root": "no-such-proc"}),
    # A kernel that gave the TSC up (hpet), one on a VM's paravirtual clock (a pass), and no sysfs to read.
    "clocksource_hpet": (None, {"clocksource": ("warn", "clocksource hpet: every clock read is a system call")},
                         {"clocksource": "clocksource-hpet"}),
    "clocksource_kvm": (None, {"clocksource": ("pass", "clocksource kvm-clock: clock reads stay in user space")},
                        {"clocksource": "clocksource-kvm"}),
    "clocksource_unreadable": (None, {"clocksource": ("not_checked", "no-such-dir/current_clocksource could not be "
                                                                     "read")},
                               {"clocksource": "no-such-dir"}),
    "wrong_numa": ("wrong-numa.json", {"topology": ("warn", "none of the CPUs this process may run on (0) is near "
                                                           "GPU 0 (NUMA node 1, CPUs 64-127)")}, {}),
    "topology_unknown": ("no-numa-affinity.json", {"topology": ("not_checked", "nvmlDeviceGetCpuAffinity: Not Supported "
                                                                  "(3); /sys/bus/pci/devices/fffe:ee:00.0/local_cpulist "
                                                                  "unreadable")}, {}),
    # options "baseline": the node (None: the default) whose `doctor --json -o` output is given to --baseline.
    "baseline_same": (None, {"baseline": ("pass", "matches the baseline")}, {"baseline": None}),
    "baseline_drift": ("drifted.json", {"baseline": ("warn", "3 differences from the baseline: node driver 580.82.07 "
                                                             "-> 580.95.05; GPU 0 applications_clocks SM 1980 MHz")},
                       {"baseline": None}),
    "baseline_gpu_missing": (None, {"baseline": ("fail", "GPU 1 of the baseline (simgpu H200 (simulated)) is missing")},
                             {"baseline": "two-devices.json"}),
    # --canary on links slow enough that simgpu's modeled copy times, not the host's memcpy, decide the figures:
    # copies at 85% of a Gen1 x4 link, and copies at 20% of a Gen1 x8 one that trained fully (what the link
    # state hides). Both run alone (RUN_SERIAL): they time copies.
    "canary_healthy": ("canary-slow-link.json", {"canary": ("pass", "of the Gen1 x4 link's 1.0 GB/s; empty-kernel "
                                                                     "launch and synchronize")}, {"canary": True}),
    # The modeled 0.4 GB/s is a ceiling: a loaded host (CI beside a build) only slows the copies further, so the
    # figures may read 0.2-0.3 and the share 10-20%; the verdict stays a failure.
    "canary_slow_copies": ("canary-slow-copies.json",
                           {"canary": ("fail", re.compile(r"pinned copies 0\.[234] GB/s host-to-device, 0\.[234] GB/s "
                                                          r"device-to-host: (1\d|20)% of the Gen1 x8"))},
                           {"canary": True}),
    "no_driver": ("real toolkit", {"driver": ("fail", "no usable NVIDIA driver: libnvidia-ml.so.1"),
                                   "cuda_runtime": ("fail", "finds no driver")}, {}),
}
LABEL = {"fail": "FAIL", "warn": "WARN", "not_checked": "----", "pass": "ok"}
SEVERITY = ["fail", "warn", "not_checked", "pass"]


def mentions(text, wanted):
    """A case's expected words: a plain substring, or a pattern where a timed figure may vary."""
    return wanted.search(text) is not None if isinstance(wanted, re.Pattern) else wanted in text


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def environment(case, node, options, simgpu_lib, nodes_dir, cuda_lib):
    env = {k: v for k, v in os.environ.items() if k not in ("CUDA_VISIBLE_DEVICES", "SIMGPU_NODE", "LD_LIBRARY_PATH")}
    if node == "real toolkit":
        env["LD_LIBRARY_PATH"] = cuda_lib  # the real runtime, no libnvidia-ml.so.1, no driver
    else:
        env["LD_LIBRARY_PATH"] = simgpu_lib
        if node:
            env["SIMGPU_NODE"] = os.path.join(nodes_dir, node)
        # A node state of its own: no other test's simulated processes show as tenants.
        env["SIMGPU_SHARED_ID"] = f"doctor-{case}-{os.getpid()}"
    env.update(options.get("env", {}))
    return env


def device_dir(root, options):
    gpus = [f"nvidia{i}" for i in range(options.get("gpus", 1))]
    for name in ["nvidiactl", "nvidia-uvm"] + gpus:
        if name in options.get("unopenable_nodes", []):
            # Its mode allows anyone to read and write it, yet open() fails (EISDIR here; in a container,
            # EPERM from the device cgroup): the check must open the node to see it.
            os.mkdir(os.path.join(root, name))
            os.chmod(os.path.join(root, name), 0o777)
        elif name not in options.get("skip_nodes", []):
            open(os.path.join(root, name), "w").close()
            os.chmod(os.path.join(root, name), 0o666)  # usable by any user, as the driver's nodes are
    os.chmod(root, 0o755)
    return root


NOBODY = 65534
AS_NOBODY = False  # the case runs doctor as nobody (set in main)


def before_doctor():
    """Every run may use CPU 0 only, as `taskset -c 0` would: the topology check's answer is then the same on
    every machine (simgpu's GPUs are near every CPU unless the node says otherwise)."""
    os.sched_setaffinity(0, {0})
    if AS_NOBODY:
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)


def run(gpuscope, args, env):
    p = subprocess.run([gpuscope, "doctor"] + args, env=env, capture_output=True, text=True, timeout=60,
                       preexec_fn=before_doctor)
    if p.stderr.strip():
        fail(f"doctor {' '.join(args)} wrote to stderr: {p.stderr.strip()}")
    return p.returncode, p.stdout


def case_checks(options):
    """The checks a case runs: baseline and canary only when it asks for them."""
    return [c for c in ALL_CHECKS if c not in ("baseline", "canary") or c in options]


def expected_states(node, expect, checks):
    def default(check):
        return "not_checked" if node == "real toolkit" and check not in HOST_CHECKS else "pass"
    return {c: expect.get(c, (default(c), ""))[0] for c in checks}


def result_count(node, checks, options):
    node_checks = len([c for c in checks if c in NODE_CHECKS])
    return len(checks) if node == "real toolkit" else \
        node_checks + (len(checks) - node_checks) * options.get("gpus", 1)


def check_json(out, code, schema, states, expect, want_code, count):
    doc = json.loads(out)
    jsonschema.Draft202012Validator(schema).validate(doc)
    if doc["exit_status"] != code or code != want_code:
        fail(f"exit status {code}, JSON says {doc['exit_status']}, expected {want_code}")
    seen = {r["check"] for r in doc["checks"]}
    if seen != set(states) or len(doc["checks"]) != count:
        fail(f"JSON: {len(doc['checks'])} results of {sorted(seen)}, expected {count} of {sorted(states)}")
    for r in doc["checks"]:
        if r["state"] != states[r["check"]]:
            fail(f"JSON: {r['check']} is {r['state']} ({r['summary']}), expected {states[r['check']]}")
        if r["check"] in expect and not mentions(r["summary"], expect[r["check"]][1]):
            fail(f"JSON: {r['check']} summary '{r['summary']}' lacks '{expect[r['check']][1]}'")
        if r["state"] in ("fail", "warn") and not r["fix"]:
            fail(f"JSON: {r['check']} is {r['state']} without a fix")
        node_wide = r["check"] in NODE_CHECKS
        if (node_wide and r["gpu"] is not None) or (not node_wide and r["state"] != "not_checked" and
                                                     r["gpu"] not in range(count)):
            fail(f"JSON: {r['check']} has gpu {r['gpu']}")
    return doc


def check_text(out, verbose_out, states, expect, count):
    lines = [l for l in out.splitlines()[1:-1]]
    if len(lines) != count:
        fail(f"text has {len(lines)} check lines, expected {count}:\n{out}")
    order = []
    for line in lines:
        label, check = line.split()[0], line.split()[1]
        if label != LABEL[states[check]]:
            fail(f"text: '{line}' should start with {LABEL[states[check]]}")
        if check in expect and not mentions(line, expect[check][1]):
            fail(f"text: '{line}' lacks '{expect[check][1]}'")
        order.append(SEVERITY.index(states[check]))
    if order != sorted(order):
        fail(f"text is not sorted by severity:\n{out}")
    if verbose_out.count("threshold: ") != count:
        fail(f"-v shows a threshold for each check:\n{verbose_out}")
    if any(s in ("fail", "warn") for s in states.values()) and "fix: " not in verbose_out:
        fail(f"-v shows no fix:\n{verbose_out}")


SAMPLE = re.compile(r'^gpuscope_doctor_check\{host="[^"]*",gpu="(\d*)",check="(\w+)",state="(\w+)"\} ([01])$')


def check_prometheus(out, states, code, count):
    ones = {}
    for line in out.splitlines():
        if line.startswith(("#", "gpuscope_doctor_exit_status", "gpuscope_doctor_simulated")):
            continue
        m = SAMPLE.match(line)
        if not m:
            fail(f"prometheus: malformed sample '{line}'")
        if m.group(4) == "1":
            ones.setdefault((m.group(1), m.group(2)), []).append(m.group(3))
    if {c for _, c in ones} != set(states) or len(ones) != count:
        fail(f"prometheus: {len(ones)} results of {sorted({c for _, c in ones})}, expected {count}")
    for (gpu, check), on in ones.items():
        if on != [states[check]]:
            fail(f"prometheus: {check} gpu '{gpu}' is {on}, expected [{states[check]}]")
    if not re.search(rf'^gpuscope_doctor_exit_status\{{host="[^"]*"\}} {code}$', out, re.M):
        fail(f"prometheus: no gpuscope_doctor_exit_status {code}")


def check_simulated(doc, text, prom, simulated):
    """simgpu is never taken for hardware: every output says so, and only then."""
    header = text.splitlines()[0]
    if doc["simulated"] != simulated or ("SIMULATED GPU" in header) != simulated:
        fail(f"simulated should be {simulated}: JSON {doc['simulated']}, text header '{header}'")
    if not re.search(rf'^gpuscope_doctor_simulated\{{host="[^"]*"\}} {int(simulated)}$', prom, re.M):
        fail(f"prometheus: no gpuscope_doctor_simulated {int(simulated)}")


def check_usage_errors(gpuscope, env):
    for args, what in ((["--json", "--format", "prometheus"], "excludes"), (["--format", "xml"], "--format")):
        p = subprocess.run([gpuscope, "doctor"] + args, env=env, capture_output=True, text=True, timeout=60)
        if p.returncode != 2 or not p.stderr.startswith("gpuscope: error: ") or what not in p.stderr or p.stdout:
            fail(f"doctor {' '.join(args)}: exit {p.returncode}, stderr '{p.stderr.strip()}', stdout '{p.stdout}'")


HINT = "Hint: You are currently not seeing messages from other users and the system."


def fake_journalctl(where, fixture):
    """A journalctl that prints a kernel log fixture (None: prints nothing but the hint an unprivileged user
    gets); the directory to put first on PATH."""
    bin_dir = os.path.join(where, "bin")
    os.makedirs(bin_dir)
    path = os.path.join(bin_dir, "journalctl")
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + (f"cat '{os.path.join(FIXTURES, fixture)}'\n" if fixture else f"echo '{HINT}' >&2\n"))
    os.chmod(path, 0o755)
    return bin_dir


def check_journal_evidence(doc, options):
    """Which log was read, and why /dev/kmsg was not, is in the evidence (or, refused, in the summary)."""
    result = next(r for r in doc["checks"] if r["check"] == "kernel_log")
    said = " ".join([result["summary"]] + result["evidence"])
    want = ["journalctl -k -b", "instead of"] if options["journal"] else ["and the journal: ", HINT]
    if not all(w in said for w in want):
        fail(f"kernel_log does not say {want}: {result}")


def save_baseline(gpuscope, env, common, nodes_dir, node, where):
    """A known-good node's `doctor --json -o FILE`: the baseline the case compares with."""
    path = os.path.join(where, "baseline.json")
    baseline_env = dict(env, SIMGPU_NODE=os.path.join(nodes_dir, node)) if node else \
        {k: v for k, v in env.items() if k != "SIMGPU_NODE"}
    code, out = run(gpuscope, common + ["--json", "-o", path], baseline_env)
    if out or not os.path.exists(path) or "facts" not in json.load(open(path)):
        fail(f"doctor --json -o {path} (exit {code}) wrote '{out}' to stdout, or no facts to the file")
    return path


def check_bad_baselines(gpuscope, env, where):
    """A baseline that is not one is a one-line usage error naming the file and what is wrong (exit 2), and no
    check runs."""
    cases = {"truncated.json": ('{"facts": {"node": {"driver": "5', "is not JSON (byte 33)"),
             "other.json": ('{"schema_version": 1, "checks": []}', 'no "facts" object'),
             "typed.json": ('{"facts": {"node": {}, "gpus": [{"index": 0, "name": 7}]}}',
                            '"facts"."gpus"[0]."name" is not a string'),
             # Found by fuzzing: two GPUs with one index made the baseline differ from itself.
             "repeated.json": ('{"facts": {"node": {}, "gpus": [{"index": 0}, {"index": 0, "name": "x"}]}}',
                               '"facts"."gpus"[1] repeats GPU index 0'),
             "huge.json": ('{"facts": {"node": {}, "gpus": [{"index": 4294967296}]}}',
                           '"facts"."gpus"[0] is not an object with an unsigned "index"'),
             # Found by fuzzing: a number out of a double's range threw past the parse error handling.
             "overflow.json": ('{"facts": {"node": {"x": 1E5555}}}', "is not JSON gpuscope can read: number overflow"),
             "missing.json": (None, "cannot read the baseline")}
    for name, (content, said) in cases.items():
        path = os.path.join(where, name)
        if content is not None:
            with open(path, "w") as f:
                f.write(content)
        p = subprocess.run([gpuscope, "doctor", "--baseline", path], env=env, capture_output=True, text=True,
                           timeout=60)
        err = p.stderr.strip()
        if p.returncode != 2 or p.stdout or "\n" in err or not err.startswith("gpuscope: error: ") or \
                said not in err or path not in err:
            fail(f"doctor --baseline {name}: exit {p.returncode}, stderr '{err}', stdout '{p.stdout[:200]}'")


def check_output_file(gpuscope, env, common, where, text):
    """-o writes what standard output would have had, and an existing file is replaced only with --force."""
    path = os.path.join(where, "doctor.txt")
    for args, want in (([], 0), ([], 2), (["--force"], 0)):
        p = subprocess.run([gpuscope, "doctor", "-o", path] + args + common, env=env, capture_output=True,
                           text=True, timeout=60, preexec_fn=before_doctor)
        if (p.returncode == 2) != (want == 2) or p.stdout or (want == 2 and "--force" not in p.stderr):
            fail(f"doctor -o {' '.join(args)}: exit {p.returncode}, stderr '{p.stderr.strip()}'")
    with open(path) as f:
        written = f.read()
    # The host_pressure line samples /proc over time: compare the rest.
    strip = lambda t: [l for l in t.splitlines() if "host_pressure" not in l]
    if strip(written) != strip(text):
        fail(f"doctor -o wrote:\n{written}\nnot what standard output had:\n{text}")


def check_reads_host(gpuscope, env, common):
    """Without --kernel-log, --proc-root and --clocksource-dir the host checks read this host: /dev/kmsg (or say
    why they could not), two /proc/stat samples 200 ms apart, and the clocksource with the timed cost of a clock
    read. Their states depend on the host, so only that is checked."""
    _, out = run(gpuscope, common + ["--json"], env)
    results = {r["check"]: r for r in json.loads(out)["checks"]}
    for check, said in (("kernel_log", "/dev/kmsg"), ("host_pressure", "/proc/stat over 200 ms"),
                        ("clocksource", "ns a read (median of 15 x 1000)")):
        if said not in results[check]["summary"] + " ".join(results[check]["evidence"]):
            fail(f"{check} on this host does not say '{said}': {results[check]}")


def main():
    case, gpuscope, simgpu_lib, nodes_dir, schema_path, cuda_lib = sys.argv[1:7]
    node, expect, options = CASES[case]
    if options.get("as_nobody"):
        with open("/proc/sys/kernel/dmesg_restrict") as f:
            restricted = f.read().strip() == "1"
        if os.geteuid() != 0 or not restricted:
            print(f"skipped: {case} needs root (to run doctor as nobody) and kernel.dmesg_restrict=1")
            sys.exit(77)
        global AS_NOBODY
        AS_NOBODY = True
    with open(schema_path) as f:
        schema = json.load(f)
    states = expected_states(node, expect, case_checks(options))
    count = result_count(node, case_checks(options), options)
    want_code = 1 if "fail" in states.values() else 3 if "warn" in states.values() else 0
    env = environment(case, node, options, simgpu_lib, nodes_dir, cuda_lib)
    try:
        with tempfile.TemporaryDirectory() as dev:
            kernel_log = options.get("kernel_log", "kernel-clean.log")  # None: /dev/kmsg
            # Where MPS clients would find the daemon: this case's own directory, with its pipe when asked.
            env["CUDA_MPS_PIPE_DIRECTORY"] = os.path.join(dev, "mps")
            env.pop("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", None)
            if options.get("mps_daemon"):
                os.makedirs(env["CUDA_MPS_PIPE_DIRECTORY"])
                os.mkfifo(os.path.join(env["CUDA_MPS_PIPE_DIRECTORY"], "control"))
            common = ["--dev-dir", device_dir(dev, options),
                      "--proc-root", os.path.join(FIXTURES, options.get("proc_root", "proc-quiet")),
                      "--clocksource-dir", os.path.join(FIXTURES, options.get("clocksource", "clocksource-tsc"))]
            if kernel_log:
                common += ["--kernel-log", os.path.join(FIXTURES, kernel_log)]
            if "kmsg" in options:
                common += ["--kmsg", os.path.join(dev, options["kmsg"])]
                env["PATH"] = fake_journalctl(dev, options["journal"]) + os.pathsep + env.get("PATH", "")
            if options.get("canary"):
                common += ["--canary"]
            if "baseline" in options:
                common += ["--baseline", save_baseline(gpuscope, env, common, nodes_dir, options["baseline"], dev)]
            code, out = run(gpuscope, common + ["--json"], env)
            doc = check_json(out, code, schema, states, expect, want_code, count)
            if "kmsg" in options:
                check_journal_evidence(doc, options)
            text_code, text = run(gpuscope, common, env)
            _, verbose = run(gpuscope, common + ["-v"], env)
            check_text(text, verbose, states, expect, count)
            prom_code, prom = run(gpuscope, common + ["--format", "prometheus"], env)
            check_prometheus(prom, states, code, count)
            check_simulated(doc, text, prom, node != "real toolkit")
            if {text_code, prom_code} != {code}:
                fail(f"exit status differs between outputs: {code}, {text_code}, {prom_code}")
            if case == "healthy":
                check_usage_errors(gpuscope, env)
                check_bad_baselines(gpuscope, env, dev)
                check_output_file(gpuscope, env, common, dev, text)
                check_reads_host(gpuscope, env, ["--dev-dir", dev])
    finally:
        for leftover in glob.glob(f"/dev/shm/*doctor-{case}-{os.getpid()}*"):
            os.unlink(leftover)
    fired = ", ".join(f"{c} {s}" for c, s in states.items() if s != "pass")
    print(f"ok: {case}: exit {code}, {count} results, " + (fired or "all passed"))


if __name__ == "__main__":
    main()
