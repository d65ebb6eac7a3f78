#!/usr/bin/env python3
"""The report's charts as laid out by a browser: probe_layout.js is appended
to a copy of the page, measures the rendered axes, ticks and lane names (in
the whole-trace view, then after a wheel zoom on the timeline and a drag on a
chart) and check_layout.py judges them:

  * every chart (the timeline and each line chart) has an x axis with
    ticks labelled with a time unit, increasing, inside the plotted range,
    each where its label says; every line chart also has a y axis with
    ticks in one unit, increasing upwards, evenly spaced;
  * every chart's time axis has the timeline's left offset and scale (a
    time is at the same x in all of them), before and after zoom and pan,
    and the ticks of the whole-trace view sit where the trace's time maps
    onto the canvas;
  * every lane's full name is its label's title and is listed in the
    lane legend;
  * the time breakdown's stacked bars have a 0-100 % axis spanning them.

Used by check_report.py; alone, it checks reports already written:
  check_layout.py REPORT.html...   (exit 1 when one is wrong)
"""
import html
import json
import os
import re
import sys

PROBE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "probe_layout.js")
TIME_LABEL = re.compile(r"^(-?\d+(?:\.(\d+))?) (ns|µs|ms|s)$")
VALUE_LABEL = re.compile(r"^(-?\d+(?:\.\d+)?) (\S.*)$")
TIME_UNITS = {"ns": 1, "µs": 1e3, "ms": 1e6, "s": 1e9}
PX = 1.0  # layout rounding allowed, in CSS pixels


def with_probe(page_html):
    """The page with the probe run after its own script."""
    with open(PROBE, encoding="utf-8") as f:
        probe = f.read()
    at = page_html.rindex("</body>")
    return page_html[:at] + "<script>" + probe + "</script>" + page_html[at:]


def probe_result(dom):
    dom = re.sub(r"<script\b.*?</script>", "", dom, flags=re.S)  # the probe's own source names the element
    m = re.search(r'<pre id="layout-probe">(.*?)</pre>', dom, re.S)
    return json.loads(html.unescape(m.group(1))) if m else None


def x_axis_problems(name, chart):
    ticks, canvas, out = chart["x"], chart["canvas"], []
    if not ticks or len(ticks) < 2:
        return [f"{name}: no time axis with ticks"]
    times = []
    for t in ticks:
        m = TIME_LABEL.match(t["label"])
        if not m:
            out.append(f"{name}: time tick label {t['label']!r} is not a number with a time unit")
            continue
        ns, digits = float(m.group(1)) * TIME_UNITS[m.group(3)], len(m.group(2) or "")
        if abs(ns - t["value"]) > 0.51 * 10 ** -digits * TIME_UNITS[m.group(3)] + 1e-6:
            out.append(f"{name}: tick {t['label']!r} stands at {t['value']} ns")
        times.append(ns)
        if not canvas["left"] - PX <= t["x"] <= canvas["right"] + PX:
            out.append(f"{name}: tick {t['label']!r} at x={t['x']:.1f} is outside the plot "
                       f"[{canvas['left']:.1f}, {canvas['right']:.1f}]")
        if chart["chart"] and not (chart["chart"]["left"] - PX <= t["box"]["left"] and
                                   t["box"]["right"] <= chart["chart"]["right"] + PX):
            out.append(f"{name}: tick label {t['label']!r} is cut off by the chart's edge")
    if any(b <= a for a, b in zip(times, times[1:])) or any(b["x"] <= a["x"] for a, b in zip(ticks, ticks[1:])):
        out.append(f"{name}: time ticks are not increasing left to right: {[t['label'] for t in ticks]}")
    return out


def y_axis_problems(name, chart):
    ticks, canvas, out = chart["y"], chart["canvas"], []
    if not ticks or len(ticks) < 2:
        return [f"{name}: no value axis with ticks"]
    labels = [VALUE_LABEL.match(t["label"]) for t in ticks]
    if not all(labels) or len({m.group(2) for m in labels}) != 1:
        return [f"{name}: value ticks without one unit: {[t['label'] for t in ticks]}"]
    numbers = [float(m.group(1)) for m in labels]
    if any(b <= a for a, b in zip(numbers, numbers[1:])) or any(b["y"] >= a["y"] for a, b in zip(ticks, ticks[1:])):
        out.append(f"{name}: value ticks do not increase upwards: {[t['label'] for t in ticks]}")
    per_unit = (ticks[-1]["y"] - ticks[0]["y"]) / ((numbers[-1] - numbers[0]) or 1)
    if any(abs(ticks[0]["y"] + (n - numbers[0]) * per_unit - t["y"]) > PX for n, t in zip(numbers, ticks)):
        out.append(f"{name}: value ticks are not where their labels say (not one linear scale): "
                   f"{[t['label'] for t in ticks]}")
    for t in ticks:
        if not canvas["top"] - PX <= t["y"] <= canvas["bottom"] + PX:
            out.append(f"{name}: value tick {t['label']!r} is outside the plot")
        if t["box"]["left"] < chart["yAxis"]["left"] - PX:
            out.append(f"{name}: value tick label {t['label']!r} overflows its axis")
    return out


def bar_problems(bars):
    """The time breakdown's bars: a 0 to 100 % axis spanning each."""
    out = []
    for i, b in enumerate(bars):
        ticks, box = b["x"], b["bar"]
        labels = [re.match(r"^(\d+(?:\.\d+)?) %$", t["label"]) for t in ticks or []]
        if len(labels) < 2 or not all(labels):
            out.append(f"time breakdown bar {i}: no 0-100 % axis with ticks")
            continue
        border = 1.0  # the bar's frame
        for m, t in zip(labels, ticks):
            expected = box["left"] + float(m.group(1)) / 100 * box["width"]
            if abs(t["x"] - expected) > PX + border:
                out.append(f"time breakdown bar {i}: tick {t['label']!r} at x={t['x']:.1f}, not {expected:.1f}")
        if float(labels[0].group(1)) != 0 or float(labels[-1].group(1)) != 100:
            out.append(f"time breakdown bar {i}: its axis does not run from 0 % to 100 %")
    return out


def time_scale(chart):
    """(x of time 0, pixels per ns) from a chart's first and last tick."""
    a, b = chart["x"][0], chart["x"][-1]
    per_ns = (b["x"] - a["x"]) / (b["value"] - a["value"])
    return a["x"] - a["value"] * per_ns, per_ns


def alignment_problems(charts, span_ns, whole):
    timeline = next((c for c in charts if c["timeline"]), None)
    if timeline is None or not timeline["x"] or len(timeline["x"]) < 2:
        return ["no timeline with a time axis to align to"]
    out = []
    origin, per_ns = time_scale(timeline)
    if whole:  # the whole trace spans the timeline's canvas
        c = timeline["canvas"]
        if abs(origin - c["left"]) > PX or abs(per_ns * span_ns - c["width"]) > PX:
            out.append(f"timeline: its ticks do not map the trace (0..{span_ns} ns) onto its canvas")
    for i, chart in enumerate(charts):
        if chart["timeline"] or not chart["x"] or len(chart["x"]) < 2:
            continue
        o, p = time_scale(chart)
        if abs(o - origin) > PX or abs(p - per_ns) * span_ns > PX:
            out.append(f"chart {chart['name'] or i}: time axis not aligned with the timeline "
                       f"(0 at x={o:.1f} vs {origin:.1f}, {p * 1e6:.4f} vs {per_ns * 1e6:.4f} px/ms)")
        if abs(chart["canvas"]["left"] - timeline["canvas"]["left"]) > PX or \
                abs(chart["canvas"]["width"] - timeline["canvas"]["width"]) > PX:
            out.append(f"chart {chart['name'] or i}: plot area not under the timeline's")
    return out


def lane_problems(lanes):
    out = []
    for i, lane in enumerate(lanes):
        if not (lane["title"] or "").startswith(lane["name"]):
            out.append(f"lane {i} ({lane['name']!r}): its label's title does not hold the full name")
        if not any(n["visible"] and lane["name"] in n["text"] for n in lane["legend"]):
            out.append(f"lane {i} ({lane['name']!r}): not listed by its full name in a lane legend")
    return out


def section_problems(section, whole):
    charts, out = section["charts"], []
    if not charts:
        return ["no chart"]
    for i, chart in enumerate(charts):
        name = "timeline" if chart["timeline"] else f"chart {chart['name'] or i}"
        out += x_axis_problems(name, chart)
        if not chart["timeline"]:
            out += y_axis_problems(name, chart)
    out += alignment_problems(charts, section["span_ns"], whole)
    return out


def layout_problems(probe, sections):
    """What is wrong with the measured layout; empty when it is right."""
    if probe is None:
        return ["the layout probe wrote no result"]
    if len(probe["whole"]) != sections:
        return [f"the probe found {len(probe['whole'])} section(s), expected {sections}"]
    out = []
    for i, (whole, zoomed) in enumerate(zip(probe["whole"], probe["zoomed"])):
        where = f"section {i}: " if sections > 1 else ""
        out += [where + m for m in section_problems(whole, True) + lane_problems(whole["lanes"]) +
                bar_problems(whole["bars"])]
        out += [where + "after zoom and pan: " + m for m in section_problems(zoomed, False)]
        if whole["charts"] and zoomed["charts"] and whole["charts"][0]["x"] and zoomed["charts"][0]["x"] and \
                whole["charts"][0]["x"] == zoomed["charts"][0]["x"]:
            out.append(where + "zoom and pan did not change the time axis")
    return out


# Each check must be able to fail: the report broken on purpose, one way at a
# time ((what breaks, text of the page, its replacement)); each must be caught.
MUTATIONS = [
    ("line charts' plot columns unlike the timeline's", "not aligned with the timeline",
     "  .chart-row { grid-template-rows: min-content 1fr; }",
     "  .chart-row { grid-template-rows: min-content 1fr; grid-template-columns: var(--label-w) 50px minmax(0, 1fr) 48px; }"),
    ("charts that do not follow the timeline's zoom", "after zoom and pan: chart",
     "state.charts.forEach(function (draw) { draw(state.view); });",
     "state.charts.forEach(function (draw) { draw({ v0: 0, v1: state.full }); });"),
    ("time tick labels that do not say their time", "stands at",
     "label: (ns / u[1]).toFixed(digits)", "label: (ns / u[1] * 2).toFixed(digits)"),
    ("time ticks beside the time they label", "do not map the trace",
     "const pos = timeX(view, width, ns);", "const pos = timeX(view, width, ns) + 9;"),
    ("ticks past the plotted range", "outside the plot", "k * step <= hi + step * 1e-9", "k * step <= hi + step * 2"),
    ("value ticks without a unit", "without one unit", 'label: v.toFixed(digits) + " " + u.name', "label: v.toFixed(digits)"),
    ("a value axis upside down", "do not increase upwards", "(1 - v / axis.top)", "(v / axis.top)"),
    ("lane labels without their full name as title", "title does not hold",
     'title: lane.label + " — "', 'title: lane.label.slice(0, 4) + " — "'),
    ("no lane legend", "not listed", "root.append(laneLegend(tl));", 'root.append(el("div"));'),
    ("a share axis not spanning its bar", "time breakdown bar", 'label: v + " %"', 'label: v / 2 + " %"'),
]


def uncaught_mutations(chromium, render, page, work):
    """The mutations that the check each targets misses (pages rendered by render(chromium, path))."""
    out = []
    for what, expected, old, new in MUTATIONS:
        if page.count(old) != 1:
            out.append(f"{what}: the text to break is not in the page once; update MUTATIONS")
            continue
        path = os.path.join(work, "mutated.html")
        with open(path, "w", encoding="utf-8") as f:
            f.write(with_probe(page.replace(old, new)))
        dom, errors = render(chromium, path)
        if errors or not any(expected in m for m in layout_problems(probe_result(dom), 1)):
            out.append(f"{what}: not caught (by a problem saying {expected!r}){' ' + errors[0] if errors else ''}")
    return out


def render_with_probe(render, chromium, path):
    """(DOM without the probe's result, console errors, the probe's result) of a report;
    render(chromium, path) is check_report's Chromium runner."""
    with open(path, encoding="utf-8") as f:
        page = f.read()
    probed = path + ".probed.html"
    with open(probed, "w", encoding="utf-8") as f:
        f.write(with_probe(page))
    try:
        dom, errors = render(chromium, probed)
    finally:
        os.remove(probed)
    return re.sub(r'<pre id="layout-probe">.*?</pre>', "", dom, flags=re.S), errors, probe_result(dom)


def main(paths):
    import check_report  # its Chromium runner
    chromium = check_report.find_chromium()
    if chromium is None:
        print("SKIP: chromium is not installed")
        return 77
    failed = False
    for path in paths:
        _, errors, probe = render_with_probe(check_report.render, chromium, path)
        problems = errors + layout_problems(probe, probe["sections"] if probe else 1)
        failed = failed or bool(problems)
        print(f"{path}: {'ok' if not problems else 'FAILED'}")
        for m in problems:
            print("  FAIL:", m)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
