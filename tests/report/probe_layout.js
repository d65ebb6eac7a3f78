// Injected by check_layout.py after the report's own script: measures where
// the page put its charts, axes, ticks and lane names (layout, not the page's
// claims about itself), zooms and pans like a user, measures again, and
// writes it all as JSON into <pre id="layout-probe"> for --dump-dom.
"use strict";
(function () {
  function box(node) {
    const r = node.getBoundingClientRect();
    return { left: r.left, right: r.right, top: r.top, bottom: r.bottom, width: r.width, height: r.height };
  }
  function ticks(axis) {
    if (!axis) return null;
    return Array.from(axis.querySelectorAll(".tick")).map(function (t) {
      const r = t.getBoundingClientRect(), label = t.querySelector(".tick-label") || t;
      return { x: r.left, y: r.top, value: Number(t.dataset.value), label: label.textContent, box: box(label) };
    });
  }
  // Every canvas of a section is a chart: the timeline's and each line chart's.
  function charts(section) {
    return Array.from(section.querySelectorAll("canvas")).map(function (canvas) {
      const chart = canvas.closest(".time-chart");
      return { timeline: canvas.classList.contains("timeline-canvas"), canvas: box(canvas),
               chart: chart ? box(chart) : null, name: chart ? chart.dataset.chart : null,
               x: chart ? ticks(chart.querySelector(".x-axis")) : null,
               y: chart ? ticks(chart.querySelector(".y-axis")) : null,
               yAxis: chart && chart.querySelector(".y-axis") ? box(chart.querySelector(".y-axis")) : null };
    });
  }
  // The time breakdown's stacked bars, each with its share axis.
  function bars(section) {
    return Array.from(section.querySelectorAll(".bar")).map(function (bar) {
      const chart = bar.closest(".bar-chart");
      return { bar: box(bar), x: chart ? ticks(chart.querySelector(".x-axis")) : null };
    });
  }
  function lanes(section, data) {
    return data.timeline.lanes.map(function (lane, i) {
      const label = section.querySelector('.lane-label[data-lane="' + i + '"]');
      const named = Array.from(section.querySelectorAll('.lane-legend [data-lane="' + i + '"]'));
      return { name: lane.label, title: label ? label.getAttribute("title") : null,
               legend: named.map(function (n) { return { text: n.textContent, visible: n.getClientRects().length > 0 }; }) };
    });
  }
  function measure(sections, data) {
    return sections.map(function (s, i) {
      return { span_ns: data.sections[i].timeline.span_ns, charts: charts(s), bars: bars(s),
               lanes: lanes(s, data.sections[i]) };
    });
  }
  function center(node) { const r = node.getBoundingClientRect(); return { x: r.left + r.width / 2, y: r.top + r.height / 2 }; }
  // Zoom in around the middle of the timeline, then drag a chart (or the timeline) to the right.
  function zoomAndPan(section) {
    const timeline = section.querySelector("canvas.timeline-canvas");
    const chart = section.querySelector("canvas:not(.timeline-canvas)") || timeline;
    if (!timeline) return;
    const c = center(timeline);
    timeline.dispatchEvent(new WheelEvent("wheel", { deltaY: -300, clientX: c.x, clientY: c.y, bubbles: true, cancelable: true }));
    const d = center(chart);
    chart.dispatchEvent(new MouseEvent("mousedown", { clientX: d.x, clientY: d.y, bubbles: true }));
    window.dispatchEvent(new MouseEvent("mousemove", { clientX: d.x + 40, clientY: d.y, bubbles: true }));
    window.dispatchEvent(new MouseEvent("mouseup", { clientX: d.x + 40, clientY: d.y, bubbles: true }));
  }

  const data = JSON.parse(document.getElementById("gpuscope-data").textContent);
  const sections = Array.from(document.querySelectorAll("section.trace"));
  const out = { sections: data.sections.length, whole: measure(sections, data) };
  sections.forEach(zoomAndPan);
  out.zoomed = measure(sections, data);
  const pre = document.createElement("pre");
  pre.id = "layout-probe";
  pre.textContent = JSON.stringify(out);
  document.body.append(pre);
})();
