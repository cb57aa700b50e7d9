/* The break-even chart (vendored uPlot): monthly cost of local, cloud and hybrid against
 * GPU-hours per month, the measured usage marked on each line, and the crossing. */
(function () {
  "use strict";

  var cost = JSON.parse(document.getElementById("cost-data").textContent);
  var container = document.getElementById("cost-chart");
  var c = cost.curves;
  var h = cost.inputs.gpu_hours_per_month;
  var at = cost.at_measured;
  var even = at.break_even_gpu_hours;

  // Extra x values for the measured point and the crossing, so they sit on the lines.
  var xs = c.gpu_hours.slice();
  [h, even].forEach(function (x) { if (x !== null && xs.indexOf(x) < 0) xs.push(x); });
  xs.sort(function (a, b) { return a - b; });
  function line(name) {
    return xs.map(function (x) {
      var i = c.gpu_hours.indexOf(x);
      if (i >= 0) return c[name][i];
      // Straight lines: interpolate between neighbouring points.
      for (var j = 1; j < c.gpu_hours.length; j++) {
        if (c.gpu_hours[j] >= x) {
          var x0 = c.gpu_hours[j - 1], x1 = c.gpu_hours[j];
          return c[name][j - 1] + (c[name][j] - c[name][j - 1]) * (x - x0) / (x1 - x0);
        }
      }
      return null;
    });
  }
  function only(x, values) { return xs.map(function (v, i) { return v === x ? values[i] : null; }); }
  var local = line("local"), cloud = line("cloud"), hybrid = line("hybrid");
  var measured = xs.map(function (v, i) {
    return v === h ? Math.min(local[i], cloud[i], hybrid[i]) : null;
  });
  var crossing = even === null ? xs.map(function () { return null; }) : only(even, local);

  function width() { return Math.max(280, container.clientWidth); }
  var dot = { show: true, size: 9 };
  var plot = new uPlot(
    {
      width: width(),
      height: 320,
      scales: { x: { time: false } },
      axes: [{ label: "GPU-hours per month" }, { label: "cost per month (" + cost.inputs.currency + ")" }],
      series: [
        { label: "GPU-hours" },
        { label: "local", stroke: "#2563eb", width: 2, points: { show: false } },
        { label: "cloud", stroke: "#dc2626", width: 2, points: { show: false } },
        { label: "hybrid", stroke: "#16a34a", width: 2, dash: [6, 4], points: { show: false } },
        { label: "measured", stroke: "#111827", fill: "#111827", paths: function () { return null; }, points: dot },
        { label: "break-even", stroke: "#7c3aed", fill: "#ffffff", paths: function () { return null; }, points: { show: true, size: 11 } },
      ],
    },
    [xs, local, cloud, hybrid, measured, crossing],
    container
  );
  container.setAttribute("data-series", "3");
  window.addEventListener("resize", function () { plot.setSize({ width: width(), height: 320 }); });
})();
