// A form with data-confirm asks its question before it submits. An attribute read here,
// not an inline onsubmit: the Content-Security-Policy runs no inline handlers.
document.addEventListener(
  "submit",
  function (event) {
    var question = event.target.getAttribute && event.target.getAttribute("data-confirm");
    if (question && !window.confirm(question)) event.preventDefault();
  },
  true
);
