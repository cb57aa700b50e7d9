/* Send a form's files to a REST endpoint with XHR so the page can show upload progress
 * (fetch() has no upload progress events). Authenticates with the session cookie and the
 * CSRF token, like any other form on the site.
 *
 * <form data-upload-url="/api/v1/datasets/" data-redirect="/datasets/__ID__/"> with
 * optional [data-upload-progress] (a .bar), [data-upload-status] and [data-upload-errors]
 * elements inside it. */
(function () {
  "use strict";

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function formatBytes(n) {
    if (n < 1024) return n + " B";
    if (n < 1024 * 1024) return (n / 1024).toFixed(1) + " KiB";
    if (n < 1024 * 1024 * 1024) return (n / 1024 / 1024).toFixed(1) + " MiB";
    return (n / 1024 / 1024 / 1024).toFixed(2) + " GiB";
  }

  function problemsOf(details) {
    if (!details) return [];
    if (Array.isArray(details.problems)) return details.problems;
    if (details.report && Array.isArray(details.report.problems)) return details.report.problems;
    return [];
  }

  function showErrors(box, body, status) {
    box.innerHTML = "";
    box.hidden = false;
    // The box is role="alert", so what is written into it is announced; focus moves to it
    // too, because the submit button was disabled under the keyboard's focus during the
    // upload and the focus would otherwise fall back to the top of the page.
    window.setTimeout(function () { box.focus(); }, 0);
    var error = (body && body.error) || {};
    var message = error.message || (status ? "The server answered " + status + "." : "Upload failed.");
    var head = el("div", { class: "error-box" });
    head.appendChild(el("strong", {}, message));
    if (error.code) head.appendChild(el("span", { class: "muted small" }, "  (" + error.code + ")"));
    box.appendChild(head);
    var problems = problemsOf(error.details);
    if (problems.length) {
      // Scrolls when the list is long: focusable, so the keyboard can scroll it too.
      var wrap = el("div", {
        class: "table-wrap report-problems",
        tabindex: "0",
        role: "region",
        "aria-label": "Problems found",
      });
      var table = el("table", { "data-testid": "upload-problems" });
      var thead = el("thead");
      var hr = el("tr");
      ["File", "Line", "Problem"].forEach(function (h) { hr.appendChild(el("th", {}, h)); });
      thead.appendChild(hr);
      table.appendChild(thead);
      var tbody = el("tbody");
      problems.forEach(function (p) {
        var tr = el("tr");
        if (typeof p === "string") p = { message: p };
        tr.appendChild(el("td", { class: "mono" }, p.file || ""));
        tr.appendChild(el("td", { class: "num" }, p.line === undefined || p.line === null ? "" : p.line));
        tr.appendChild(el("td", {}, p.message || p.problem || JSON.stringify(p)));
        tbody.appendChild(tr);
      });
      table.appendChild(tbody);
      wrap.appendChild(table);
      box.appendChild(wrap);
    } else if (error.details && Object.keys(error.details).length) {
      box.appendChild(el("pre", { class: "log" }, JSON.stringify(error.details, null, 2)));
    }
  }

  function announce(message) {
    if (window.carrilAnnounce) window.carrilAnnounce(message);
  }

  function csrfToken(form) {
    var input = form.querySelector("input[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

  function attach(form) {
    var bar = form.querySelector("[data-upload-progress]");
    var fill = bar ? bar.querySelector("span") : null;
    var status = form.querySelector("[data-upload-status]");
    var errors = form.querySelector("[data-upload-errors]");
    var button = form.querySelector("button[type=submit]");

    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var data = new FormData(form);
      data.delete("csrfmiddlewaretoken");
      // Empty optional fields mean "the server's default", not an empty string; a file
      // input left empty is sent by the browser as a nameless empty file, which the API
      // reads as "not a file": it is left out too.
      Array.from(data.keys()).forEach(function (key) {
        var values = data.getAll(key);
        var empty = function (v) {
          return v === "" || (typeof File !== "undefined" && v instanceof File && v.name === "" && v.size === 0);
        };
        if (values.length === 1 && empty(values[0])) data.delete(key);
      });
      var xhr = new XMLHttpRequest();
      xhr.open("POST", form.getAttribute("data-upload-url"));
      xhr.setRequestHeader("X-CSRFToken", csrfToken(form));
      xhr.setRequestHeader("Accept", "application/json");
      if (errors) { errors.hidden = true; errors.innerHTML = ""; }
      if (bar) { bar.hidden = false; bar.classList.remove("bad", "ok"); }
      if (button) button.disabled = true;
      // Said once, not at every progress event: the status line below the bar changes
      // many times a second and is not a live region for that reason.
      announce("Uploading…");

      xhr.upload.addEventListener("progress", function (e) {
        if (!e.lengthComputable) return;
        var pct = Math.round((e.loaded / e.total) * 100);
        if (fill) fill.style.width = pct + "%";
        if (bar) bar.setAttribute("aria-valuenow", String(pct));
        if (status) status.textContent = "Uploading… " + pct + "% (" + formatBytes(e.loaded) + " of " + formatBytes(e.total) + ")";
      });
      xhr.upload.addEventListener("load", function () {
        if (fill) fill.style.width = "100%";
        if (bar) bar.setAttribute("aria-valuenow", "100");
        var processing = form.getAttribute("data-processing-text") || "Uploaded; the server is checking it…";
        if (status) status.textContent = processing;
        announce(processing);
      });
      xhr.addEventListener("load", function () {
        var body = null;
        try { body = JSON.parse(xhr.responseText); } catch (e) { body = null; }
        if (xhr.status >= 200 && xhr.status < 300 && body && body.id !== undefined) {
          if (bar) bar.classList.add("ok");
          if (status) status.textContent = "Done.";
          var placeholder = form.getAttribute("data-redirect-placeholder") || "__ID__";
          var target = form.getAttribute("data-redirect").replace(placeholder, encodeURIComponent(body.id));
          window.location.assign(target);
          return;
        }
        if (bar) bar.classList.add("bad");
        if (status) status.textContent = "";
        if (errors) showErrors(errors, body, xhr.status);
        if (button) button.disabled = false;
      });
      xhr.addEventListener("error", function () {
        if (bar) bar.classList.add("bad");
        if (status) status.textContent = "";
        if (errors) showErrors(errors, { error: { message: "The connection failed during the upload." } });
        if (button) button.disabled = false;
      });
      xhr.send(data);
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("form[data-upload-url]").forEach(attach);
  });
})();
