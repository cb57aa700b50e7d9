/* The job page: poll the job's JSON status view and keep the progress bar, figures, chart
 * and log tail current. When the job finishes the page reloads once so the server renders
 * the final results (seeds table, gallery); a finished page does not poll at all. */
(function () {
  "use strict";

  var states = { terminal: [], cancellable: [], failure: [], success: [] };

  function isIn(kind, state) {
    return (states[kind] || []).indexOf(state) !== -1;
  }

  function isTerminal(state) {
    return isIn("terminal", state);
  }

  function $(id) {
    return document.getElementById(id);
  }

  function text(id, value) {
    var node = $(id);
    if (node) node.textContent = value;
  }

  function pair(a, b) {
    if (a === null || a === undefined) return "–";
    return b ? a + " / " + b : String(a);
  }

  function renderProgress(job) {
    var p = job.progress || {};
    // The status document says 1 for a succeeded job.
    var fraction = typeof p.fraction === "number" ? p.fraction : 0;
    var pct = Math.round(fraction * 1000) / 10;
    var fill = document.querySelector("#job-progress > span");
    if (fill) fill.style.width = pct + "%";
    var bar = $("job-progress");
    if (bar) {
      bar.setAttribute("aria-valuenow", String(pct));
      bar.classList.toggle("ok", isIn("success", job.state));
      bar.classList.toggle("bad", isIn("failure", job.state));
    }
    var percentText = pct.toFixed(pct >= 100 ? 0 : 1) + "%";
    text("job-percent", percentText);
    if (bar && window.carrilProgressText) {
      bar.setAttribute("aria-valuetext", window.carrilProgressText(p, percentText, job.state));
    }
    text("fig-seed", pair(p.seed, p.seeds));
    text("fig-epoch", pair(p.epoch, p.epochs));
    text("fig-batch", pair(p.batch, p.batches));
    text("fig-stage", p.stage || "–");
  }

  function renderState(job) {
    var badge = $("job-state");
    if (!badge) return;
    var before = badge.getAttribute("data-state");
    // The end of a job is announced after the reload that follows it (onDone), once.
    var ends = isTerminal(job.state);
    if (before !== job.state && !ends && window.carrilAnnounce) {
      window.carrilAnnounce("Job " + job.state + ".");
    }
    badge.textContent = job.state;
    badge.className = "badge badge-" + job.state;
    badge.setAttribute("data-state", job.state);
    var cancel = $("job-cancel");
    if (cancel && !isIn("cancellable", job.state)) cancel.hidden = true;
  }

  function renderLog(lines) {
    var log = $("job-log");
    if (!log || !Array.isArray(lines)) return;
    // Keep following the tail unless the reader has scrolled up to read something.
    var atBottom = log.scrollTop + log.clientHeight >= log.scrollHeight - 8;
    var joined = lines.join("\n");
    if (log.textContent !== joined) {
      log.textContent = joined || "(no output yet)";
      if (atBottom) log.scrollTop = log.scrollHeight;
    }
  }

  function renderError(job) {
    var box = $("job-error");
    if (!box) return;
    // Only a failure is an error: a cancel's note is the server's, after the reload.
    if (isIn("failure", job.state) && job.error && job.error.message) {
      box.hidden = false;
      text("job-error-code", job.error.code || "");
      text("job-error-message", job.error.message);
    }
  }

  function show(id, value) {
    var node = $(id);
    if (!node) return;
    if (node.textContent !== (value || "")) node.textContent = value || "";
    node.hidden = !value;
  }

  /* The story (ui/job_story.py): waiting for the GPU service, attempts and resumes. It
   * sits in a polite live region, so only text that changed is written. */
  function renderStory(story) {
    if (!story) return;
    show("job-waiting", story.waiting);
    show("job-waiting-error", story.waiting_error);
    var list = $("job-attempts");
    var lines = story.attempts || [];
    if (list) {
      var current = Array.prototype.map.call(list.children, function (li) { return li.textContent; });
      if (current.join("\n") !== lines.join("\n")) {
        while (list.firstChild) list.removeChild(list.firstChild);
        lines.forEach(function (line) {
          var item = document.createElement("li");
          item.textContent = line;
          list.appendChild(item);
        });
      }
      list.hidden = lines.length === 0;
    }
    var card = $("job-story-card");
    if (card) card.hidden = !story.waiting && lines.length === 0;
  }

  document.addEventListener("DOMContentLoaded", function () {
    var configNode = $("job-config");
    if (!configNode) return;
    var config = JSON.parse(configNode.textContent);
    states = config.states || states;
    var log = $("job-log");
    if (log) log.scrollTop = log.scrollHeight;  // the tail is what matters
    var chartNode = $("job-chart");
    var chart = chartNode && window.carrilEpochChart ? window.carrilEpochChart(chartNode) : null;
    if (chart && config.epochs) chart.update(config.epochs);
    if (isTerminal(config.state)) return;

    window.carrilPoll({
      url: config.status_url,
      fastMs: 1000,
      slowMs: 10000,
      onData: function (data) {
        var job = data.job;
        states = data.states || states;
        renderState(job);
        renderProgress(job);
        renderError(job);
        renderStory(data.story);
        if (chart) chart.update((job.metrics && job.metrics.epochs) || []);
        renderLog(data.log);
        text("poll-note", "");
      },
      onError: function () {
        text("poll-note", "Lost contact with the server; retrying…");
      },
      isDone: function (data) {
        return isTerminal(data.job.state);
      },
      onDone: function (data) {
        var job = data.job;
        var end = "Job " + job.state + ".";
        // Why it failed is worth hearing; "cancelled: the job was cancelled" is not.
        var failed = isIn("failure", job.state);
        if (failed && job.error && job.error.message) end = "Job " + job.state + ": " + job.error.message;
        if (window.carrilAnnounceAfterReload) window.carrilAnnounceAfterReload(end);
        window.location.reload();
      },
    });
  });
})();
