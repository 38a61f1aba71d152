// The evaluate form: the cost estimate follows the provider, model, levels, scenes, repeats and
// conditions chosen: each condition's run and their total.
(function () {
  "use strict";
  var box = document.querySelector("aside.estimate[data-url]");
  var form = document.querySelector("form.hosted");
  if (!box || !form || !window.fetch || !window.URLSearchParams) { return; }
  var numbers = new Intl.NumberFormat("en-US");
  function dollars(value, none) { return value === null ? none : "about $" + value.toFixed(2); }
  function cell(tag, text, scope) {
    var el = document.createElement(tag);
    el.textContent = text;
    if (scope) { el.scope = scope; } else { el.className = "num"; }
    return el;
  }
  function showConditions(data) {
    var wrap = box.querySelector('[data-part="conditions"]');
    var subject = box.querySelector('[data-part="subject"]');
    if (subject) { subject.textContent = "What " + (data.runs > 1 ? "these " + data.runs + " runs" : "this run") + " will cost"; }
    if (!wrap || !data.conditions) { return; }
    wrap.hidden = data.runs < 2;
    var body = wrap.querySelector("tbody");
    body.textContent = "";
    data.conditions.forEach(function (c) {
      var row = document.createElement("tr");
      row.appendChild(cell("th", c.label, "row"));
      row.appendChild(cell("td", numbers.format(c.episodes)));
      row.appendChild(cell("td", c.cost_usd === null ? "no price" : "$" + c.cost_usd.toFixed(2)));
      body.appendChild(row);
    });
  }
  var asked = 0;  // the latest estimate asked for: an older answer arriving after it is dropped
  function update() {
    var mine = ++asked;
    var query = new URLSearchParams();
    ["provider", "model", "scenes", "repeats"].forEach(function (name) {
      var field = form.querySelector('[name="' + name + '"]:checked') || form.querySelector('[name="' + name + '"]');
      if (field && field.type !== "radio") { query.set(name, field.value); }
      else if (field && field.checked) { query.set(name, field.value); }
    });
    form.querySelectorAll('[name="levels"]:checked').forEach(function (box) { query.append("levels", box.value); });
    form.querySelectorAll('[name="conditions"]:checked').forEach(function (box) { query.append("conditions", box.value); });
    fetch(box.dataset.url + "?" + query.toString(), { headers: { Accept: "application/json" } })
      .then(function (response) { return response.json(); })
      .then(function (data) {
        if (mine !== asked || data.error) { return; }
        box.querySelectorAll("[data-field]").forEach(function (el) {
          var value = data[el.dataset.field];
          if (el.dataset.field === "cost_usd") {
            el.textContent = dollars(value, "no price configured for this model");
          } else {
            el.textContent = typeof value === "number" && el.dataset.field !== "steps_per_episode" ? numbers.format(value) : value;
          }
        });
        showConditions(data);
      })
      .catch(function () { /* the server-side figure stays */ });
  }
  form.addEventListener("change", update);
})();
