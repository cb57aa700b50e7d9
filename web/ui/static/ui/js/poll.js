/* Poll a small JSON status view: quickly while the tab is visible, slowly while it is
 * hidden (no point spending requests on a page nobody looks at), and not at all once the
 * thing being watched is finished. */
(function () {
  "use strict";

  function carrilPoll(options) {
    var url = options.url;
    var onData = options.onData;
    var isDone = options.isDone || function () { return false; };
    var onError = options.onError || function () {};
    var fastMs = options.fastMs || 1000;
    var slowMs = options.slowMs || 10000;
    var timer = null;
    var stopped = false;
    var inFlight = false;
    var failures = 0;

    function delay() {
      var base = document.visibilityState === "visible" ? fastMs : slowMs;
      // Back off while the server does not answer, up to a minute.
      return Math.min(base * Math.pow(2, failures), 60000);
    }

    function schedule(ms) {
      if (stopped) return;
      clearTimeout(timer);
      timer = setTimeout(tick, ms);
    }

    function stop() {
      stopped = true;
      clearTimeout(timer);
      document.removeEventListener("visibilitychange", onVisibility);
    }

    function tick() {
      if (stopped || inFlight) return;
      inFlight = true;
      fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" })
        .then(function (response) {
          if (!response.ok) throw new Error("HTTP " + response.status);
          return response.json();
        })
        .then(function (data) {
          failures = 0;
          onData(data);
          if (isDone(data)) {
            stop();
            if (options.onDone) options.onDone(data);
          }
        })
        .catch(function (err) {
          failures = Math.min(failures + 1, 6);
          onError(err);
        })
        .finally(function () {
          inFlight = false;
          schedule(delay());
        });
    }

    function onVisibility() {
      // Coming back to the tab: refresh now instead of waiting out the slow interval.
      if (document.visibilityState === "visible") schedule(0);
    }

    document.addEventListener("visibilitychange", onVisibility);
    schedule(options.immediate === false ? delay() : 0);
    return { stop: stop, now: function () { schedule(0); } };
  }

  window.carrilPoll = carrilPoll;
})();
