/* The job page's per-epoch chart: losses on the left axis, mAP on the right (0..1).
 * Built on the vendored uPlot; fed the `epochs` list of a job's metrics
 * ({seed, epoch, box_loss, cls_loss, dfl_loss, precision, recall, mAP50, "mAP50-95"}). */
(function () {
  "use strict";

  var SERIES = [
    { key: "box_loss", label: "box loss", stroke: "#ef4444", scale: "loss" },
    { key: "cls_loss", label: "cls loss", stroke: "#f59e0b", scale: "loss" },
    { key: "dfl_loss", label: "dfl loss", stroke: "#a855f7", scale: "loss" },
    { key: "mAP50", label: "mAP50", stroke: "#2563eb", scale: "map", width: 2.5 },
    { key: "mAP50-95", label: "mAP50-95", stroke: "#16a34a", scale: "map", width: 2.5 },
  ];

  function number(v) {
    return typeof v === "number" && isFinite(v) ? v : null;
  }

  function toColumns(epochs) {
    var xs = [];
    var cols = SERIES.map(function () { return []; });
    epochs.forEach(function (row, i) {
      xs.push(i + 1);
      SERIES.forEach(function (s, j) { cols[j].push(number(row[s.key])); });
    });
    return [xs].concat(cols);
  }

  function tickLabel(epochs, multiSeed) {
    return function (u, splits) {
      return splits.map(function (x) {
        var row = epochs[Math.round(x) - 1];
        if (!row || Math.round(x) !== x) return "";
        return multiSeed ? "s" + row.seed + " e" + row.epoch : String(row.epoch);
      });
    };
  }

  function isMultiSeed(epochs) {
    return epochs.some(function (r) { return r.seed && r.seed !== epochs[0].seed; });
  }

  function carrilEpochChart(container) {
    var plot = null;
    var lastLength = -1;
    var epochsRef = [];
    var builtMultiSeed = null;

    function width() {
      return Math.max(280, container.clientWidth);
    }

    function build(epochs) {
      var multiSeed = isMultiSeed(epochs);
      builtMultiSeed = multiSeed;
      var opts = {
        width: width(),
        height: 300,
        scales: { x: { time: false }, loss: { auto: true }, map: { range: [0, 1] } },
        axes: [
          {
            label: multiSeed ? "seed / epoch" : "epoch",
            values: tickLabel(epochsRef, multiSeed),
            incrs: [1, 2, 5, 10, 20, 50, 100],
          },
          { scale: "loss", label: "loss" },
          { scale: "map", label: "mAP", side: 1, grid: { show: false } },
        ],
        series: [{ label: multiSeed ? "step" : "epoch" }].concat(
          SERIES.map(function (s) {
            return {
              label: s.label,
              stroke: s.stroke,
              scale: s.scale,
              width: s.width || 1.5,
              points: { show: true, size: 5 },
              spanGaps: true,
            };
          })
        ),
        legend: { live: false },
      };
      if (plot) plot.destroy();
      container.innerHTML = "";
      plot = new uPlot(opts, toColumns(epochs), container);
      container.setAttribute("data-points", String(epochs.length));
    }

    function update(epochs) {
      epochs = epochs || [];
      if (epochs.length === lastLength) return;
      lastLength = epochs.length;
      epochsRef.length = 0;
      Array.prototype.push.apply(epochsRef, epochs);
      if (!epochs.length) return;
      // Axis labels change once a second seed appears; rebuild rather than patch.
      if (!plot || isMultiSeed(epochs) !== builtMultiSeed) build(epochs);
      else plot.setData(toColumns(epochs));
      container.setAttribute("data-points", String(epochs.length));
    }

    window.addEventListener("resize", function () {
      if (plot) plot.setSize({ width: width(), height: 300 });
    });

    return { update: update };
  }

  window.carrilEpochChart = carrilEpochChart;
})();
