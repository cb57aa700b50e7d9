/* The dashboard: poll its status view and swap in the fragments the server rendered. */
(function () {
  "use strict";

  function swap(id, html) {
    var node = document.getElementById(id);
    if (node && typeof html === "string" && node.innerHTML !== html) node.innerHTML = html;
  }

  document.addEventListener("DOMContentLoaded", function () {
    var config = JSON.parse(document.getElementById("dashboard-config").textContent);
    var note = document.getElementById("poll-note");
    window.carrilPoll({
      url: config.status_url,
      fastMs: config.fast_ms || 2000,
      slowMs: config.slow_ms || 20000,
      immediate: false,
      onData: function (data) {
        swap("dashboard-gpus", data.gpus_html);
        swap("dashboard-queue", data.queue_html);
        swap("dashboard-jobs", data.jobs_html);
        if (note) note.textContent = "";
      },
      onError: function () {
        if (note) note.textContent = "Lost contact with the server; retrying…";
      },
    });
  });
})();
