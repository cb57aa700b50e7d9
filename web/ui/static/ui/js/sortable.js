/* Tables sorted by any column: a button in each heading (so the keyboard reaches it and
 * a screen reader hears "button"), the heading's aria-sort saying the order, and the new
 * order announced in the page's live region. Rows keep their cells; only order changes.
 * Cells give their sort key in data-value (numbers as written by the server). */
(function () {
  "use strict";

  function key(row, index, type) {
    var cell = row.children[index];
    var raw = cell ? cell.getAttribute("data-value") : null;
    if (raw === null) raw = cell ? cell.textContent.trim() : "";
    if (type === "number") {
      var n = parseFloat(raw);
      return isFinite(n) ? n : null;
    }
    return raw.toLowerCase();
  }

  function compare(a, b, descending) {
    // Empty values ("–") go last whichever the direction.
    if (a === null && b === null) return 0;
    if (a === null) return 1;
    if (b === null) return -1;
    var order = a < b ? -1 : a > b ? 1 : 0;
    return descending ? -order : order;
  }

  function sortBy(table, th, descending) {
    var headings = table.tHead.rows[0].cells;
    var index = Array.prototype.indexOf.call(headings, th);
    var button = th.querySelector("button.sort");
    var type = button ? button.getAttribute("data-type") : "text";
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows
      .map(function (row, position) { return { row: row, key: key(row, index, type), at: position }; })
      .sort(function (x, y) { return compare(x.key, y.key, descending) || x.at - y.at; })
      .forEach(function (item) { body.appendChild(item.row); });
    Array.prototype.forEach.call(headings, function (cell) {
      if (cell === th) cell.setAttribute("aria-sort", descending ? "descending" : "ascending");
      else cell.removeAttribute("aria-sort");
    });
    if (window.carrilAnnounce) {
      window.carrilAnnounce(
        "Sorted by " + th.textContent.trim() + ", " + (descending ? "highest" : "lowest") + " first"
      );
    }
  }

  function carrilSortable(table) {
    if (!table.tHead || !table.tBodies.length) return;
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) {
      var button = th.querySelector("button.sort");
      if (!button) return;
      button.addEventListener("click", function () {
        // A column first sorted descending for numbers (best first), ascending for text.
        var now = th.getAttribute("aria-sort");
        var descending = now ? now === "ascending" : button.getAttribute("data-type") === "number";
        sortBy(table, th, descending);
      });
    });
  }

  window.carrilSortable = carrilSortable;
  document.addEventListener("DOMContentLoaded", function () {
    Array.prototype.forEach.call(document.querySelectorAll("table[data-sortable]"), carrilSortable);
  });
})();
