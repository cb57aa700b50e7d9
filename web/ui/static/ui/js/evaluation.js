/* The evaluation page: draw each curve from the page's JSON (curves.js) and switch the
 * confusion matrix between counts and shares of each true class. */
(function () {
  "use strict";

  function drawCurves() {
    var data = document.getElementById("evaluation-curves");
    if (!data || !window.carrilLineChart) return;
    var charts = JSON.parse(data.textContent).charts || [];
    charts.forEach(function (chart) {
      var box = document.querySelector('[data-curve="' + chart.id + '"]');
      if (!box) return;
      chart.x_range = [0, 1];
      chart.y_range = [0, 1];
      window.carrilLineChart(box, chart, box.getAttribute("data-labelledby"));
    });
  }

  function confusionToggle() {
    var group = document.querySelector("[data-confusion-toggle]");
    if (!group) return;
    group.addEventListener("change", function (event) {
      var normalised = event.target.value === "normalised";
      document.querySelectorAll(".confusion .cm-count").forEach(function (n) { n.hidden = normalised; });
      document.querySelectorAll(".confusion .cm-share").forEach(function (n) { n.hidden = !normalised; });
      var caption = document.querySelector("[data-confusion-caption]");
      if (caption) caption.textContent = normalised ? "shares of each true class" : "counts";
      if (window.carrilAnnounce) {
        window.carrilAnnounce(
          "Confusion matrix shows " + (normalised ? "shares of each true class" : "counts")
        );
      }
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    drawCurves();
    confusionToggle();
  });
})();
