#!/usr/bin/env python3
"""The HTML report in a real browser: samples traced on simgpu, their reports
(one per trace, and one for the directory of all of them) loaded by headless
Chromium; each must draw without a console error or exception, show its
verdict and the timeline's lanes, and label the simulated GPU; its charts'
axes, their alignment with the timeline and the lanes' full names are
measured as laid out (check_layout.py). A service's report with
--requests must hold every request in its histogram, name the tail's cause,
and move the timeline onto a slowest request when its link is clicked. A report with deliberately broken
JavaScript must be caught, and so must a report broken in each way a layout
check is about, so the checks themselves are known to work. Exit 77 (ctest:
skipped) when Chromium is not installed.

  check_report.py --bin BUILD/bin --simgpu-lib BUILD/simgpu/lib [--keep DIR] [--screenshot PNG]
"""
import argparse
import atexit
import html as html_lib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import check_layout

# sample -> the verdict class its report must show (None: any).
SAMPLES = {"sync_bound": "sync_bound", "pcie_bound": "pcie_bound", "alloc_churn": "memory_bound",
           "nvtx_phases": None}
# What a JavaScript error looks like on Chromium's stderr (--enable-logging=stderr):
# uncaught exceptions and console messages both come as CONSOLE lines; the
# report's script logs nothing, so any console line is a failure.
CONSOLE_ERROR = re.compile(r"Uncaught|:CONSOLE[(:]|CONSOLE\(\d+\)")


def find_chromium():
    for name in (os.environ.get("GPUSCOPE_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


# One throw-away browser profile for every run of this check, removed at exit.
PROFILE = tempfile.mkdtemp(prefix="gpuscope-chromium-")
atexit.register(shutil.rmtree, PROFILE, True)


def chromium_args(chromium, *extra):
    # --no-sandbox: CI runs as root; --disable-gpu: headless machines have none.
    return [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0",
            "--user-data-dir=" + PROFILE, *extra]


def render(chromium, html):
    """(DOM, list of console error lines) of the page after its script ran."""
    r = subprocess.run(chromium_args(chromium, "--virtual-time-budget=5000", "--dump-dom",
                                     "file://" + os.path.abspath(html)),
                       capture_output=True, text=True, timeout=120)
    errors = [line for line in r.stderr.splitlines() if CONSOLE_ERROR.search(line)]
    if r.returncode != 0:
        errors.append(f"chromium exited with {r.returncode}: {r.stderr[-2000:]}")
    return r.stdout, errors


def problems_in(dom, errors, verdict, sections):
    """What is wrong with a rendered report; empty when it is right."""
    dom = re.sub(r"<script\b.*?</script>", "", dom, flags=re.S)  # the page's own code and data
    out = list(errors)
    if 'data-render="done"' not in dom:
        out.append("the script did not finish drawing (no data-render=\"done\")")
    if "data-render-error" in dom:
        out.append("the page caught an error: " + re.search(r'data-render-error="([^"]*)"', dom).group(1))
    if dom.count("VERDICT: ") != sections:
        out.append(f"expected {sections} verdict line(s), found {dom.count('VERDICT: ')}")
    if verdict and f'data-verdict="{verdict}"' not in dom:
        out.append(f"verdict {verdict} not shown")
    lanes = len(re.findall(r'class="lane-label [a-z]+" data-lane="\d+"', dom))
    if lanes < 2 * sections:
        out.append(f"only {lanes} timeline lane label(s)")
    if dom.count('data-drawn="') < sections:
        out.append("the timeline canvas was not drawn")
    if dom.count("SIMULATED GPU") != sections:
        out.append("the simulated GPU is not labeled")
    return out


def check_page(chromium, html, verdict, sections):
    """(problems, DOM) of a rendered report: its content, then its charts' layout (check_layout.py)."""
    dom, errors, probe = check_layout.render_with_probe(render, chromium, html)
    return problems_in(dom, errors, verdict, sections) + check_layout.layout_problems(probe, sections), dom


def run(argv, env=None):
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)


def trace_samples(args, work):
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_PRELOAD", "GPUSCOPE_OUTPUT", "SIMGPU_NODE", "CUDA_VISIBLE_DEVICES")}
    env["LD_LIBRARY_PATH"] = args.simgpu_lib
    traces = os.path.join(work, "traces")
    os.makedirs(traces)
    for sample in SAMPLES:
        path = os.path.join(traces, sample + ".gpuscope")
        r = run([os.path.join(args.bin, "gpuscope"), "run", "-q", "-o", path, "--",
                 os.path.join(args.bin, sample)], env)
        if r.returncode != 0 or not os.path.exists(path):
            sys.exit(f"FAIL: tracing {sample}: exit {r.returncode}\n{r.stderr}")
    return traces


def report(args, inputs, html):
    r = run([os.path.join(args.bin, "gpuscope"), "report", inputs, "-o", html])
    if r.returncode != 0 or not os.path.exists(html):
        sys.exit(f"FAIL: gpuscope report {inputs}: exit {r.returncode}\n{r.stderr}")


# Injected after the report's script: clicks the first slowest request's link
# and records the timeline's view before and after, as a user would see it.
CLICK_PROBE = """<script>
(function () {
  const link = document.querySelector("[data-start-ns]"), canvas = document.querySelector("canvas.timeline-canvas");
  const before = canvas ? canvas.dataset.view : "";
  if (link) link.click();
  const out = document.createElement("pre");
  out.id = "click-probe";
  out.textContent = JSON.stringify({ start: link ? Number(link.dataset.startNs) : null, before: before,
                                     after: canvas ? canvas.dataset.view : "" });
  document.body.append(out);
})();
</script>"""


def request_problems(chromium, args, work):
    """The Requests section of a service's report: the histogram holds every
    request, the tail's cause is named, and a slowest request's link moves the
    timeline onto that request."""
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "GPUSCOPE_OUTPUT", "SIMGPU_NODE")}
    env["LD_LIBRARY_PATH"] = args.simgpu_lib
    trace = os.path.join(work, "service.gpuscope")
    r = run([os.path.join(args.bin, "gpuscope"), "run", "-q", "-o", trace, "--",
             os.path.join(args.bin, "request_service"), "--requests", "120", "--large-every", "10"], env)
    if r.returncode != 0:
        return [f"tracing request_service: exit {r.returncode}: {r.stderr[-500:]}"]
    html = os.path.join(work, "service.html")
    r = run([os.path.join(args.bin, "gpuscope"), "report", trace, "--requests", "request", "-o", html])
    if r.returncode != 0:
        return [f"gpuscope report --requests: exit {r.returncode}: {r.stderr[-500:]}"]
    with open(html, encoding="utf-8") as f:
        page = f.read()
    probed = html + ".click.html"
    with open(probed, "w", encoding="utf-8") as f:
        f.write(page.replace("</body>", CLICK_PROBE + "</body>"))
    dom, errors = render(chromium, probed)
    out = problems_in(dom, errors, None, 1)
    if 'data-requests="request"' not in dom:
        out.append("no Requests section")
    counts = [int(c) for c in re.findall(r'data-count="(\d+)"', dom)]
    if sum(counts) != 120:
        out.append(f"the histogram holds {sum(counts)} requests in {len(counts)} bins, not 120")
    if dom.count("data-start-ns=") != 5:
        out.append(f"{dom.count('data-start-ns=')} slowest-request links, not 5")
    if 'data-tail-cause="copy_to_device_pageable"' not in dom:
        out.append("the tail's cause (pageable host->device copies) is not named")
    probe = re.search(r'<pre id="click-probe">(.*?)</pre>', dom, re.S)
    if probe is None:
        return out + ["the click probe did not run"]
    click = json.loads(html_lib.unescape(probe.group(1)))
    v0, v1 = (int(x) for x in click["after"].split(":"))
    if click["after"] == click["before"] or not v0 <= click["start"] <= v1:
        out.append(f"clicking the slowest request at {click['start']} ns left the timeline on {click['after']} "
                   f"(was {click['before']})")
    print(f"requests: {len(counts)} bins, link to {click['start']} ns -> view {click['after']}")
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--simgpu-lib", required=True)
    p.add_argument("--keep", help="write the traces and reports here (kept)")
    p.add_argument("--screenshot", help="also save a screenshot of the pcie_bound report")
    args = p.parse_args()
    chromium = find_chromium()
    if chromium is None:
        print("SKIP: chromium is not installed (scripts/install-deps.sh installs it); the report was not rendered")
        return 77
    work = args.keep or tempfile.mkdtemp(prefix="gpuscope-report-")
    os.makedirs(work, exist_ok=True)
    traces = trace_samples(args, work)
    failures = []
    for sample, verdict in SAMPLES.items():
        html = os.path.join(work, sample + ".html")
        report(args, os.path.join(traces, sample + ".gpuscope"), html)
        problems, dom = check_page(chromium, html, verdict, 1)
        if sample == "nvtx_phases" and 'data-kind="nvtx"' not in dom:
            problems.append("no NVTX lane")
        failures += [f"{sample}: {m}" for m in problems]
        print(f"{sample}: {os.path.getsize(html)} bytes, {'ok' if not problems else 'FAILED'}")
    all_html = os.path.join(work, "all.html")
    report(args, traces, all_html)
    failures += [f"directory report: {m}" for m in check_page(chromium, all_html, None, len(SAMPLES))[0]]

    failures += [f"requests report: {m}" for m in request_problems(chromium, args, work)]

    # The check must catch a script error: the same page with a name that does not exist.
    with open(os.path.join(work, "pcie_bound.html"), encoding="utf-8") as f:
        page = f.read()
    broken = os.path.join(work, "broken.html")
    with open(broken, "w", encoding="utf-8") as f:
        f.write(page.replace("data.sections.forEach(renderSection);", "data.sections.forEach(renderSectionTypo);"))
    dom, errors = render(chromium, broken)
    if not errors or not problems_in(dom, errors, "pcie_bound", 1):
        failures.append("a report with broken JavaScript was not caught: the check does not work")
    else:
        print("broken JavaScript caught:", errors[0][:200])

    # ... and each layout check must catch the page broken in the way it is about.
    failures += ["layout check: " + m for m in check_layout.uncaught_mutations(chromium, render, page, work)]
    if args.screenshot:
        subprocess.run(chromium_args(chromium, "--screenshot=" + os.path.abspath(args.screenshot),
                                     "--window-size=1400,1800", "--virtual-time-budget=5000", "--hide-scrollbars",
                                     "file://" + os.path.abspath(os.path.join(work, "pcie_bound.html"))),
                       capture_output=True, timeout=120)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
