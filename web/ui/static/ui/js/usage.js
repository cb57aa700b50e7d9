/* The usage page's charts (vendored uPlot): GPU-hours per day as bars over the month,
 * per user and per kind as bars. The tables beside them hold the same numbers. */
(function () {
  "use strict";

  var data = JSON.parse(document.getElementById("usage-data").textContent);

  function bars(container, labels, values, stroke) {
    if (!container) return;
    var xs = labels.map(function (_, i) { return i; });
    var width = function () { return Math.max(280, container.clientWidth); };
    var plot = new uPlot(
      {
        width: width(),
        height: 220,
        scales: { x: { time: false, range: [-0.6, Math.max(0.6, labels.length - 0.4)] } },
        axes: [
          {
            values: function (u, splits) {
              return splits.map(function (x) { return labels[x] !== undefined && Math.round(x) === x ? labels[x] : ""; });
            },
            incrs: [1, 2, 5, 7, 10],
          },
          { label: "GPU-hours" },
        ],
        series: [
          { label: labels.length ? "" : "none" },
          {
            label: "GPU-hours",
            stroke: stroke,
            fill: stroke + "99",
            paths: uPlot.paths.bars({ size: [0.7, 60] }),
            points: { show: false },
          },
        ],
        legend: { show: false },
      },
      [xs, values],
      container
    );
    container.setAttribute("data-points", String(values.length));
    window.addEventListener("resize", function () { plot.setSize({ width: width(), height: 220 }); });
  }

  bars(
    document.getElementById("usage-per-day"),
    data.by_day.map(function (r) { return r.day.slice(8); }),
    data.by_day.map(function (r) { return r.gpu_hours; }),
    "#2563eb"
  );
  bars(
    document.getElementById("usage-per-user"),
    data.by_user.map(function (r) { return r.user; }),
    data.by_user.map(function (r) { return r.gpu_hours; }),
    "#16a34a"
  );
  bars(
    document.getElementById("usage-per-kind"),
    data.by_kind.map(function (r) { return r.kind; }),
    data.by_kind.map(function (r) { return r.gpu_hours; }),
    "#a855f7"
  );
})();
