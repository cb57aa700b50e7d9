/* The dashboard: poll its status view and swap in the fragments the server rendered. */
(function () {
  "use strict";

  function swap(id, html) {
    var node = document.getElementById(id);
    if (!node || typeof html !== "string" || node.innerHTML === html) return;
    // A keyboard user on a link in the fragment would otherwise be sent back to the top of
    // the page by every refresh: put the focus back on the same link if it is still there.
    var active = document.activeElement;
    var href = active && node.contains(active) ? active.getAttribute("href") : null;
    node.innerHTML = html;
    if (href) {
      var again = node.querySelector('a[href="' + CSS.escape(href) + '"]');
      if (again) again.focus();
    }
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
