// MirrorBench: small progressive enhancements. Every page works without JavaScript.
(function () {
  "use strict";
  // The checkbox that submitted the form, so that focus returns to it on the new page
  // instead of jumping to the top (keyboard and screen-reader users would lose their place).
  var FOCUS_KEY = "mirrorbench:filter-focus";

  function remember(box) {
    try { sessionStorage.setItem(FOCUS_KEY, box.name + "=" + box.value); } catch (e) { /* storage off */ }
  }

  function restoreFocus() {
    var saved = null;
    try {
      saved = sessionStorage.getItem(FOCUS_KEY);
      sessionStorage.removeItem(FOCUS_KEY);
    } catch (e) { return; }
    if (!saved) { return; }
    var cut = saved.indexOf("=");
    var name = saved.slice(0, cut), value = saved.slice(cut + 1);
    document.querySelectorAll('form.filters input[type="checkbox"]').forEach(function (box) {
      if (box.name === name && box.value === value) { box.focus(); }
    });
  }

  document.querySelectorAll("form.filters").forEach(function (form) {
    // Apply a filter as soon as a checkbox changes; text and number inputs wait for Enter/Apply.
    form.querySelectorAll('input[type="checkbox"]').forEach(function (box) {
      box.addEventListener("change", function () {
        remember(box);
        if (form.requestSubmit) { form.requestSubmit(); } else { form.submit(); }
      });
    });
    // A choice of benchmark version applies at once too.
    form.querySelectorAll("select").forEach(function (select) {
      select.addEventListener("change", function () {
        if (form.requestSubmit) { form.requestSubmit(); } else { form.submit(); }
      });
    });
    // Leave empty fields out of the URL, so shared links and CSV links stay short.
    form.addEventListener("submit", function () {
      form.querySelectorAll("input, select").forEach(function (input) {
        if (input.value === "" && input.type !== "checkbox") { input.disabled = true; }
      });
    });
  });

  // Coming back with the Back button can show the page as it was left, fields still disabled.
  window.addEventListener("pageshow", function () {
    document.querySelectorAll("form.filters input:disabled, form.filters select:disabled").forEach(function (input) {
      input.disabled = false;
    });
  });

  // Shade the sorted column: the server marks only its heading (th.sorted).
  document.querySelectorAll("table.board.ranked").forEach(function (table) {
    var heads = table.querySelectorAll("thead tr:last-child th");
    // Cells before the score columns: the row-spanning headings left of the first group.
    var first = table.querySelector("thead tr:first-child th.group");
    var leading = 0;
    for (var th = first && first.previousElementSibling; th; th = th.previousElementSibling) { leading += 1; }
    var index = Array.prototype.findIndex.call(heads, function (th) {
      return th.classList.contains("sorted");
    });
    if (index < 0) { return; }
    table.querySelectorAll("tbody tr").forEach(function (row) {
      var cell = row.children[leading + index];
      if (cell) { cell.classList.add("sorted"); }
    });
    // On a narrow screen the sorted score is repeated beside the model (td.key): the frame
    // stays at its start, rank, model and score in view, the other columns a swipe away.
  });

  restoreFocus();
})();

// Frames not stored yet: a card shows a placeholder and names its frame in data-frame, so the
// page never waits while frames are rendered. Once the page has loaded, ask for them four at a
// time, those in view first, and put each in as it arrives; a busy server's 503 or 429 is asked
// again after its Retry-After. New cards (a live run's) announce themselves with the
// "frames:added" event.
(function () {
  "use strict";
  if (!window.fetch || !window.URL || !URL.createObjectURL) { return; }
  var AT_ONCE = 4;  // of a browser's six connections to a server: the page's own requests go on
  var TRIES = 30;
  var waiting = [];  // [url, tries], in page order
  var known = {};  // url -> its image source once it has arrived, or "" while asked for
  var busy = 0;

  function fill() {
    document.querySelectorAll("img[data-frame]").forEach(function (img) {
      var src = known[img.dataset.frame];
      if (src) {
        img.src = src;
        img.dataset.filled = img.dataset.frame;
        img.removeAttribute("data-frame");
      }
    });
  }

  function later(url, tries, seconds) {
    setTimeout(function () { waiting.push([url, tries + 1]); next(); }, seconds * 1000);
  }

  function ask(url, tries) {
    busy += 1;
    fetch(url, { credentials: "same-origin", redirect: "manual" })
      .then(function (response) {
        if (response.type === "opaqueredirect") { known[url] = url; return; }  // stored on S3
        if (response.ok) {
          return response.blob().then(function (blob) { known[url] = URL.createObjectURL(blob); });
        }
        if ((response.status === 503 || response.status === 429) && tries < TRIES) {
          var after = parseInt(response.headers.get("Retry-After"), 10);
          later(url, tries, Math.min(Math.max(isNaN(after) ? 2 : after, 1), 60));
          return;
        }
        document.querySelectorAll("img[data-frame]").forEach(function (img) {
          if (img.dataset.frame === url) {
            img.classList.add("frame-missing");
            img.title = "This frame cannot be shown now; the episode's page has its steps.";
          }
        });
      })
      .catch(function () { if (tries < TRIES) { later(url, tries, 5); } })
      .then(function () { busy -= 1; fill(); next(); });
  }

  function next() {
    while (busy < AT_ONCE && waiting.length) {
      var item = waiting.shift();
      if (document.querySelector('img[data-frame="' + item[0] + '"]')) { ask(item[0], item[1]); }
    }
  }

  function collect() {
    fill();
    var fresh = [];
    document.querySelectorAll("img[data-frame]").forEach(function (img) {
      var url = img.dataset.frame;
      if (!(url in known)) {
        known[url] = "";
        var box = img.getBoundingClientRect();
        fresh.push([url, 0, box.bottom > 0 && box.top < window.innerHeight ? 0 : 1]);
      }
    });
    // The frames in view first, then the rest in page order (the sort is stable).
    fresh.sort(function (a, b) { return a[2] - b[2]; });
    waiting = waiting.concat(fresh);
    next();
  }

  document.addEventListener("frames:added", collect);
  if (document.readyState === "complete") { collect(); } else { window.addEventListener("load", collect); }
})();

// A run in progress: refresh its counters every two seconds until it ends, then reload once
// to show the finished episodes and scores. The episode cards of the page that are not
// finished yet come back with the counters (as the page renders them) and are swapped in.
(function () {
  "use strict";
  var section = document.querySelector("section.progress[data-url]");
  if (!section || !window.fetch) { return; }
  var bar = section.querySelector("progress");
  var numbers = window.Intl ? new Intl.NumberFormat("en-US") : null;
  var WHOLE = ["episodes_done", "steps", "bad", "episodes_error", "input_tokens", "output_tokens"];

  function shown(field, value) {
    if (value === null || value === undefined) { return "\u2014"; }
    if (numbers && WHOLE.indexOf(field) >= 0) { return numbers.format(value); }
    return value;
  }

  function unfinishedCards() {
    return Array.prototype.map.call(
      document.querySelectorAll("li.episode-card[data-episode]:not([data-final])"),
      function (card) { return card.dataset.episode; }
    );
  }

  function swapCards(cards) {
    Object.keys(cards || {}).forEach(function (id) {
      var old = document.querySelector('li.episode-card[data-episode="' + id + '"]');
      if (!old) { return; }
      var holder = document.createElement("template");
      holder.innerHTML = cards[id].trim();
      var card = holder.content.firstElementChild;
      if (!card) { return; }
      // A frame already put in stays: the new card shows it instead of its placeholder.
      var had = old.querySelector("img[data-filled]");
      var wants = card.querySelector("img[data-frame]");
      if (had && wants && had.dataset.filled === wants.dataset.frame) {
        wants.src = had.src;
        wants.dataset.filled = had.dataset.filled;
        wants.removeAttribute("data-frame");
      }
      if (old.outerHTML !== card.outerHTML) { old.replaceWith(card); }
    });
    document.dispatchEvent(new Event("frames:added"));
  }

  function tick() {
    var ids = unfinishedCards();
    var url = section.dataset.url + (ids.length ? "?episodes=" + ids.join(",") : "");
    fetch(url, { headers: { Accept: "application/json" } })
      .then(function (response) { return response.json(); })
      .then(function (data) {
        section.querySelectorAll("[data-field]").forEach(function (el) {
          el.textContent = shown(el.dataset.field, data[el.dataset.field]);
        });
        if (bar) { bar.value = data.episodes_done; }
        section.querySelectorAll("[data-level]").forEach(function (el) {
          var avg = (data.avg_by_level || {})[el.dataset.level];
          el.textContent = avg === null || avg === undefined ? "\u2014" : avg.toFixed(3);
        });
        swapCards(data.cards);
        if (data.status === "pending" || data.status === "running") {
          setTimeout(tick, 2000);
        } else {
          window.location.reload();
        }
      })
      .catch(function () { setTimeout(tick, 5000); });
  }
  setTimeout(tick, 2000);
})();
