// The evaluate form: the cost estimate follows the provider, model, levels, scenes and repeats chosen.
(function () {
  "use strict";
  var box = document.querySelector("aside.estimate[data-url]");
  var form = document.querySelector("form.hosted");
  if (!box || !form || !window.fetch || !window.URLSearchParams) { return; }
  var numbers = new Intl.NumberFormat("en-US");
  function update() {
    var query = new URLSearchParams();
    ["provider", "model", "scenes", "repeats"].forEach(function (name) {
      var field = form.querySelector('[name="' + name + '"]:checked') || form.querySelector('[name="' + name + '"]');
      if (field && field.type !== "radio") { query.set(name, field.value); }
      else if (field && field.checked) { query.set(name, field.value); }
    });
    form.querySelectorAll('[name="levels"]:checked').forEach(function (box) { query.append("levels", box.value); });
    fetch(box.dataset.url + "?" + query.toString(), { headers: { Accept: "application/json" } })
      .then(function (response) { return response.json(); })
      .then(function (data) {
        if (data.error) { return; }
        box.querySelectorAll("[data-field]").forEach(function (el) {
          var value = data[el.dataset.field];
          if (el.dataset.field === "cost_usd") {
            el.textContent = value === null ? "no price configured for this model" : "about $" + value.toFixed(2);
          } else {
            el.textContent = typeof value === "number" && el.dataset.field !== "steps_per_episode" ? numbers.format(value) : value;
          }
        });
      })
      .catch(function () { /* the server-side figure stays */ });
  }
  form.addEventListener("change", update);
})();
