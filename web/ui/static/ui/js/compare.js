/* The compare page: overlay the runs' per-epoch curves, one series per run and seed, from
 * the page's JSON (curves.js). The numbers are in the tables and captions beside them. */
(function () {
  "use strict";

  document.addEventListener("DOMContentLoaded", function () {
    var data = document.getElementById("compare-curves");
    if (!data || !window.carrilLineChart) return;
    (JSON.parse(data.textContent).charts || []).forEach(function (chart) {
      var box = document.querySelector('[data-curve="' + chart.id + '"]');
      if (box) window.carrilLineChart(box, chart, box.getAttribute("data-labelledby"));
    });
  });
})();
