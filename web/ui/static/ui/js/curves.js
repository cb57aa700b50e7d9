/* Line charts drawn as inline SVG from JSON (ADR 0044): the evaluation's curves (PR, F1,
 * precision and recall against confidence) and the compare page's per-epoch curves.
 * No library: a few polylines, axes and a legend. Each series has its own colour AND its
 * own dash pattern, so nothing is told by colour alone; the page carries a text
 * alternative (a summary and a table) beside every chart, which the SVG points to. */
(function () {
  "use strict";

  var NS = "http://www.w3.org/2000/svg";
  // Dark enough for 3:1 against white (graphics contrast).
  var COLOURS = ["#1d4ed8", "#b91c1c", "#15803d", "#7e22ce", "#b45309", "#0e7490", "#be185d", "#4d7c0f"];
  var DASHES = ["", "6 3", "2 3", "8 3 2 3", "12 4", "3 6", "10 2 2 2 2 2", "1 3"];
  var W = 480, H = 300, LEFT = 44, RIGHT = 12, TOP = 12, BOTTOM = 40;

  function el(name, attrs, text) {
    var node = document.createElementNS(NS, name);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function finite(v) {
    return typeof v === "number" && isFinite(v);
  }

  function extent(values, fallback) {
    var lo = Infinity, hi = -Infinity;
    values.forEach(function (v) { if (finite(v)) { lo = Math.min(lo, v); hi = Math.max(hi, v); } });
    if (lo === Infinity) return fallback;
    if (lo === hi) { lo -= 0.5; hi += 0.5; }
    return [lo, hi];
  }

  function ticks(range, count) {
    var out = [];
    for (var i = 0; i <= count; i++) out.push(range[0] + (range[1] - range[0]) * i / count);
    return out;
  }

  // Whole numbers only (epochs): no tick at epoch 1.2.
  function integerTicks(range, count) {
    var step = Math.max(1, Math.ceil((range[1] - range[0]) / count));
    var out = [];
    for (var t = Math.ceil(range[0]); t <= range[1]; t += step) out.push(t);
    return out;
  }

  function style(index) {
    return { colour: COLOURS[index % COLOURS.length], dash: DASHES[index % DASHES.length] };
  }

  /* chart: {x_label, y_label, x: [...] (shared) , series: [{name, y: [...], x?: [...]}],
   *         x_range?, y_range?, x_integer?}; labelledby: the id of the text that names and describes it. */
  function carrilLineChart(container, chart, labelledby) {
    var allX = [], allY = [];
    chart.series.forEach(function (s) {
      (s.x || chart.x || []).forEach(function (v) { allX.push(v); });
      s.y.forEach(function (v) { allY.push(v); });
    });
    var xr = chart.x_range || extent(allX, [0, 1]);
    var yr = chart.y_range || extent(allY, [0, 1]);
    var sx = function (v) { return LEFT + (v - xr[0]) / (xr[1] - xr[0]) * (W - LEFT - RIGHT); };
    var sy = function (v) { return H - BOTTOM - (v - yr[0]) / (yr[1] - yr[0]) * (H - TOP - BOTTOM); };

    var svg = el("svg", { viewBox: "0 0 " + W + " " + H, role: "img", class: "curve-svg", focusable: "false" });
    if (labelledby) svg.setAttribute("aria-labelledby", labelledby);
    var axes = el("g", { class: "axes", "aria-hidden": "true" });
    ticks(yr, 5).forEach(function (t) {
      axes.appendChild(el("line", { x1: LEFT, x2: W - RIGHT, y1: sy(t), y2: sy(t), class: "grid" }));
      axes.appendChild(el("text", { x: LEFT - 6, y: sy(t) + 4, "text-anchor": "end" }, +t.toFixed(2)));
    });
    (chart.x_integer ? integerTicks(xr, 8) : ticks(xr, 5)).forEach(function (t) {
      axes.appendChild(el("text", { x: sx(t), y: H - BOTTOM + 16, "text-anchor": "middle" }, +t.toFixed(2)));
    });
    axes.appendChild(el("line", { x1: LEFT, x2: W - RIGHT, y1: H - BOTTOM, y2: H - BOTTOM, class: "axis" }));
    axes.appendChild(el("line", { x1: LEFT, x2: LEFT, y1: TOP, y2: H - BOTTOM, class: "axis" }));
    axes.appendChild(el("text", { x: (LEFT + W - RIGHT) / 2, y: H - 6, "text-anchor": "middle" }, chart.x_label));
    axes.appendChild(el("text", { x: 12, y: (TOP + H - BOTTOM) / 2, "text-anchor": "middle", transform: "rotate(-90 12 " + (TOP + H - BOTTOM) / 2 + ")" }, chart.y_label));
    svg.appendChild(axes);

    var lines = el("g", { class: "series", "aria-hidden": "true" });
    chart.series.forEach(function (s, i) {
      var xs = s.x || chart.x;
      var look = style(s.style === undefined ? i : s.style);
      var points = [];
      s.y.forEach(function (v, j) {
        if (finite(v) && finite(xs[j])) points.push(sx(xs[j]).toFixed(1) + "," + sy(v).toFixed(1));
      });
      var line = el("polyline", {
        points: points.join(" "),
        fill: "none",
        stroke: look.colour,
        "stroke-width": 2,
        "data-series": s.name,
      });
      if (look.dash) line.setAttribute("stroke-dasharray", look.dash);
      lines.appendChild(line);
    });
    svg.appendChild(lines);

    var legend = document.createElement("ul");
    legend.className = "curve-legend";
    chart.series.forEach(function (s, i) {
      var look = style(s.style === undefined ? i : s.style);
      var item = document.createElement("li");
      var key = el("svg", { width: 28, height: 10, "aria-hidden": "true", focusable: "false" });
      var sample = el("line", { x1: 0, x2: 28, y1: 5, y2: 5, stroke: look.colour, "stroke-width": 2 });
      if (look.dash) sample.setAttribute("stroke-dasharray", look.dash);
      key.appendChild(sample);
      item.appendChild(key);
      item.appendChild(document.createTextNode(" " + s.name));
      legend.appendChild(item);
    });

    container.innerHTML = "";
    container.appendChild(svg);
    container.appendChild(legend);
    container.setAttribute("data-series-count", String(chart.series.length));
    return svg;
  }

  window.carrilLineChart = carrilLineChart;
})();
