/* The inference form's image size follows the chosen model version (ADR 0045): it shows
 * the size the version was trained at, the one the job runs at unless changed. A size the
 * user typed is theirs and is kept; the help line always says the model's own size. */
(function () {
  "use strict";
  var select = document.getElementById("id_model_version");
  var input = document.getElementById("id_imgsz");
  var help = document.getElementById("id_imgsz_help");
  if (!select || !input || !help) return;
  var fallback = input.getAttribute("data-default-imgsz") || "640";
  var typed = false;

  input.addEventListener("input", function () { typed = true; });

  select.addEventListener("change", function () {
    var option = select.options[select.selectedIndex];
    var trained = option ? option.getAttribute("data-imgsz") : "";
    if (!typed) input.value = trained || fallback;
    help.textContent = trained
      ? "The model was trained at " + trained + "; another size is allowed and noted on the job."
      : "The model records no training size; " + fallback + " is used.";
  });
})();
