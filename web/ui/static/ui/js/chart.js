/* The job page's per-epoch chart: losses on the left axis, mAP on the right (0..1).
 * Built on the vendored uPlot; fed the `epochs` list of a job's metrics
 * ({seed, epoch, box_loss, cls_loss, dfl_loss, precision, recall, mAP50, "mAP50-95"}).
 * The x axis is the epoch; each seed is its own series (same colour per value, its own
 * dash pattern per seed), so one seed's last epoch is never joined to the next seed's
 * first. */
(function () {
  "use strict";

  var SERIES = [
    { key: "box_loss", label: "box loss", stroke: "#ef4444", scale: "loss" },
    { key: "cls_loss", label: "cls loss", stroke: "#f59e0b", scale: "loss" },
    { key: "dfl_loss", label: "dfl loss", stroke: "#a855f7", scale: "loss" },
    { key: "mAP50", label: "mAP50", stroke: "#2563eb", scale: "map", width: 2.5 },
    { key: "mAP50-95", label: "mAP50-95", stroke: "#16a34a", scale: "map", width: 2.5 },
  ];
  var DASHES = [[], [8, 4], [2, 3], [10, 3, 2, 3], [14, 5]];

  function number(v) {
    return typeof v === "number" && isFinite(v) ? v : null;
  }

  function seedsOf(epochs) {
    var seeds = [];
    epochs.forEach(function (r) {
      if (seeds.indexOf(r.seed) === -1) seeds.push(r.seed);
    });
    return seeds;
  }

  /* x: every epoch number seen; one column per seed and value, null where that seed has
   * no such epoch (yet). */
  function toColumns(epochs, seeds) {
    var most = 0;
    epochs.forEach(function (r) { most = Math.max(most, r.epoch || 0); });
    var xs = [];
    for (var e = 1; e <= most; e++) xs.push(e);
    var cols = [xs];
    seeds.forEach(function (seed) {
      var bySeed = {};
      epochs.forEach(function (r) { if (r.seed === seed) bySeed[r.epoch] = r; });
      SERIES.forEach(function (s) {
        cols.push(xs.map(function (x) { return bySeed[x] ? number(bySeed[x][s.key]) : null; }));
      });
    });
    return cols;
  }

  function carrilEpochChart(container) {
    var plot = null;
    var lastLength = -1;
    var builtSeeds = "";

    function width() {
      return Math.max(280, container.clientWidth);
    }

    function build(epochs, seeds) {
      var multiSeed = seeds.length > 1;
      var series = [{ label: "epoch" }];
      seeds.forEach(function (seed, i) {
        SERIES.forEach(function (s) {
          series.push({
            label: multiSeed ? s.label + " (seed " + seed + ")" : s.label,
            stroke: s.stroke,
            dash: DASHES[i % DASHES.length],
            scale: s.scale,
            width: s.width || 1.5,
            points: { show: true, size: 5 },
            // Within a seed a missing value is skipped over; seeds never meet (own series).
            spanGaps: true,
          });
        });
      });
      var opts = {
        width: width(),
        height: 300,
        scales: { x: { time: false }, loss: { auto: true }, map: { range: [0, 1] } },
        axes: [
          { label: "epoch", incrs: [1, 2, 5, 10, 20, 50, 100] },
          { scale: "loss", label: "loss" },
          { scale: "map", label: "mAP", side: 1, grid: { show: false } },
        ],
        series: series,
        legend: { live: false },
      };
      if (plot) plot.destroy();
      container.innerHTML = "";
      plot = new uPlot(opts, toColumns(epochs, seeds), container);
    }

    function update(epochs) {
      epochs = epochs || [];
      if (epochs.length === lastLength) return;
      lastLength = epochs.length;
      if (!epochs.length) return;
      var seeds = seedsOf(epochs);
      // A new seed adds series: rebuild rather than patch.
      if (!plot || seeds.join(",") !== builtSeeds) build(epochs, seeds);
      else plot.setData(toColumns(epochs, seeds));
      builtSeeds = seeds.join(",");
      container.setAttribute("data-points", String(epochs.length));
      container.setAttribute("data-seeds", String(seeds.length));
      container.setAttribute("data-series", String(seeds.length * SERIES.length));
    }

    window.addEventListener("resize", function () {
      if (plot) plot.setSize({ width: width(), height: 300 });
    });

    return { update: update };
  }

  window.carrilEpochChart = carrilEpochChart;
})();
