/* Say what changed to people who cannot see it change: one polite live region per page
 * (#announcer, in base.html), and a message that survives the reload a finished job's page
 * does, so "Job succeeded" is still heard after the page is rendered afresh. */
(function () {
  "use strict";

  var PENDING = "carril-announce";

  function announce(message) {
    var region = document.getElementById("announcer");
    if (!region || !message) return;
    // Empty first, then write on the next frame: a live region only speaks when its text
    // changes, and the same message twice ("running" after a lost connection) must speak.
    region.textContent = "";
    window.setTimeout(function () {
      region.textContent = message;
    }, 50);
  }

  function announceAfterReload(message) {
    try {
      window.sessionStorage.setItem(PENDING, message);
    } catch (e) {
      /* storage refused (private mode): the reloaded page's own heading still says it */
    }
  }

  function part(label, value, total) {
    if (value === null || value === undefined || !total) return "";
    return ", " + label + " " + value + " of " + total;
  }

  /* The progress bar's aria-valuetext: "40.0%, seed 1 of 2, epoch 3 of 10, batch 2 of 4". */
  function progressText(progress, percentText, state) {
    var p = progress || {};
    if (state === "succeeded") return percentText + ", finished";
    return (
      percentText +
      part("seed", p.seed, p.seeds) +
      part("epoch", p.epoch, p.epochs) +
      part("batch", p.batch, p.batches)
    );
  }

  document.addEventListener("DOMContentLoaded", function () {
    var pending = null;
    try {
      pending = window.sessionStorage.getItem(PENDING);
      window.sessionStorage.removeItem(PENDING);
    } catch (e) {
      pending = null;
    }
    // Wait a moment: assistive technology notices a live region only once it is in the
    // page, and text put there in the same instant can go unheard.
    if (pending) window.setTimeout(function () { announce(pending); }, 400);
  });

  window.carrilAnnounce = announce;
  window.carrilAnnounceAfterReload = announceAfterReload;
  window.carrilProgressText = progressText;
})();
