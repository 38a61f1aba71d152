// MirrorBench: small progressive enhancements. Every page works without JavaScript.
(function () {
  "use strict";
  // Apply a filter as soon as a checkbox changes; text and number inputs wait for Enter/Apply.
  document.querySelectorAll("form.filters").forEach(function (form) {
    form.querySelectorAll('input[type="checkbox"]').forEach(function (box) {
      box.addEventListener("change", function () { form.requestSubmit(); });
    });
    // Leave empty fields out of the URL, so shared links and CSV links stay short.
    form.addEventListener("submit", function () {
      form.querySelectorAll("input").forEach(function (input) {
        if (input.value === "" && input.type !== "checkbox") { input.disabled = true; }
      });
    });
  });
})();
