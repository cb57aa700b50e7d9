/* Draw detection or label boxes over an image as an SVG overlay.
 *
 * Markup: <figure class="boxed" data-boxes='{"boxes": [...]}'> <div class="boxed-frame">
 * <img ...></div> </figure>. A box is {xyxy: [x1, y1, x2, y2]} in image pixels (detections)
 * or {xywhn: [cx, cy, w, h]} normalised to 0..1 (YOLO label files), plus optional
 * `label`, `cls` (class index, picks the colour) and `conf`. The SVG's viewBox is the
 * image's natural size, so boxes stay put whatever size the image is shown at. */
(function () {
  "use strict";

  var PALETTE = [
    "#ff3b30", "#34c759", "#0a84ff", "#ff9f0a", "#bf5af2", "#64d2ff", "#ffd60a",
    "#ff375f", "#30d158", "#5e5ce6", "#ac8e68", "#66d4cf",
  ];
  var SVG_NS = "http://www.w3.org/2000/svg";

  function colourFor(cls) {
    var i = Number.isInteger(cls) ? cls : 0;
    return PALETTE[((i % PALETTE.length) + PALETTE.length) % PALETTE.length];
  }

  // Black or white, whichever reads better on the class colour: white on the palette's
  // bright greens and yellows is under 2:1.
  function inkFor(hex) {
    var c = [1, 3, 5].map(function (i) {
      var v = parseInt(hex.substr(i, 2), 16) / 255;
      return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
    });
    var luminance = 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
    return (luminance + 0.05) / 0.05 > 1.05 / (luminance + 0.05) ? "#000000" : "#ffffff";
  }

  function toPixels(box, width, height) {
    if (box.xyxy) return box.xyxy;
    var n = box.xywhn;
    var cx = n[0] * width, cy = n[1] * height, w = n[2] * width, h = n[3] * height;
    return [cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2];
  }

  function draw(figure) {
    var img = figure.querySelector("img");
    if (!img || !img.naturalWidth) return;
    var spec;
    try {
      spec = JSON.parse(figure.getAttribute("data-boxes") || "{}");
    } catch (e) {
      return;
    }
    var boxes = spec.boxes || [];
    var width = img.naturalWidth, height = img.naturalHeight;
    var frame = img.parentNode;
    var old = frame.querySelector("svg");
    if (old) old.remove();
    var svg = document.createElementNS(SVG_NS, "svg");
    svg.setAttribute("viewBox", "0 0 " + width + " " + height);
    svg.setAttribute("preserveAspectRatio", "none");
    svg.setAttribute("data-box-count", String(boxes.length));
    // One text alternative for the drawing: how many boxes, and of what.
    var names = boxes.map(function (b) { return b.label || String(b.cls); });
    svg.setAttribute("role", "img");
    svg.setAttribute(
      "aria-label",
      boxes.length + (boxes.length === 1 ? " box" : " boxes") + (names.length ? ": " + names.join(", ") : "")
    );
    // About 12 screen pixels whatever the scale, so 64 px samples shown large and
    // 4K photos shown small both read; in image pixels that depends on the display size.
    var shown = img.clientWidth || width;
    var fontSize = Math.max(1, (12 * width) / shown);
    boxes.forEach(function (box) {
      var xy = toPixels(box, width, height);
      var colour = colourFor(box.cls);
      var rect = document.createElementNS(SVG_NS, "rect");
      rect.setAttribute("x", xy[0]);
      rect.setAttribute("y", xy[1]);
      rect.setAttribute("width", Math.max(0, xy[2] - xy[0]));
      rect.setAttribute("height", Math.max(0, xy[3] - xy[1]));
      rect.setAttribute("stroke", colour);
      rect.setAttribute("class", "box");
      svg.appendChild(rect);
      var text = box.label || (box.cls !== undefined ? String(box.cls) : "");
      if (box.conf !== undefined && box.conf !== null) text += " " + Number(box.conf).toFixed(2);
      if (text) {
        // A tag in the box's colour above its top-left corner (inside it at the image
        // edge); its width is estimated, as the SVG is not laid out yet.
        var tagHeight = fontSize * 1.3;
        var tagWidth = fontSize * 0.62 * text.length + fontSize * 0.5;
        var tagY = xy[1] - tagHeight >= 0 ? xy[1] - tagHeight : xy[1];
        var tag = document.createElementNS(SVG_NS, "rect");
        tag.setAttribute("x", xy[0]);
        tag.setAttribute("y", tagY);
        tag.setAttribute("width", tagWidth);
        tag.setAttribute("height", tagHeight);
        tag.setAttribute("fill", colour);
        tag.setAttribute("class", "tag");
        svg.appendChild(tag);
        var label = document.createElementNS(SVG_NS, "text");
        label.setAttribute("x", xy[0] + fontSize * 0.25);
        label.setAttribute("y", tagY + fontSize * 1.0);
        label.setAttribute("font-size", fontSize);
        label.textContent = text;
        label.style.fill = inkFor(colour);  // the stylesheet's white is the default
        svg.appendChild(label);
      }
    });
    frame.appendChild(svg);
    figure.classList.add("drawn");
  }

  function drawAll(root) {
    (root || document).querySelectorAll("figure.boxed[data-boxes]").forEach(function (figure) {
      var img = figure.querySelector("img");
      if (!img) return;
      if (img.complete && img.naturalWidth) draw(figure);
      else img.addEventListener("load", function () { draw(figure); }, { once: true });
    });
  }

  window.carrilBoxes = { draw: draw, drawAll: drawAll, colourFor: colourFor };
  document.addEventListener("DOMContentLoaded", function () { drawAll(document); });
})();
