/* Play an episode in the browser: buttons and keys 1-6 send an answer for the current step;
   the server checks it and answers with the next step, whose frame is then loaded and shown.
   Every text is set with textContent. The time from the key press to the next frame shown is
   kept on the section (data-last-step-ms, data-last-post-ms) and shown under the image. */
(function () {
  "use strict";
  var root = document.querySelector("[data-play]");
  var dataNode = document.getElementById("play-data");
  var startForm = document.querySelector("[data-play-start]");
  if (!root || !dataNode || !startForm) return;
  var config = JSON.parse(dataNode.textContent);
  var field = function (name) { return root.querySelector('[data-field="' + name + '"]'); };
  var buttons = Array.prototype.slice.call(root.querySelectorAll("[data-option]"));
  var frame = field("frame"), box = frame.parentNode, frameStatus = field("frame-status");
  var previous = field("previous"), previousNone = field("previous-none");
  var state = null, busy = false;

  function text(name, value) { var node = field(name); if (node) node.textContent = value; }

  function post(url, params) {
    return fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "X-CSRFToken": config.csrf, "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(params).toString()
    });
  }

  function reply(response) {
    /* Resolve with the JSON of a 2xx; reject with the server's sentence otherwise. */
    var wait = response.headers.get("Retry-After");
    return response.text().then(function (body) {
      var json = null;
      try { json = JSON.parse(body); } catch (e) { json = null; }
      if (response.ok && json) return json;
      var message = json && json.error ? json.error : "the server answered " + response.status;
      if (response.status === 429) message = "Too many answers at once: try again in " + (wait || "a few") + " s.";
      var error = new Error(message);
      error.status = response.status;
      throw error;
    });
  }

  function load(url) {
    /* Resolve once the image is decoded; a frame still rendering (503) is asked for again. */
    return new Promise(function (resolve, reject) {
      var image = new Image(), tries = 0;
      image.onload = function () {
        (image.decode ? image.decode() : Promise.resolve()).then(function () { resolve(url); }, function () { resolve(url); });
      };
      image.onerror = function () {
        if (++tries > 5) { reject(url); return; }
        setTimeout(function () { image.src = url + (url.indexOf("?") < 0 ? "?" : "&") + "retry=" + tries; }, 1000);
      };
      image.src = url;
    });
  }

  function showFrames(view) {
    var url = view.frame.webp;
    box.dataset.state = "loading";
    frameStatus.textContent = "Rendering this frame…";
    field("png").href = view.frame.png;
    if (view.previous) {
      previous.src = view.previous.webp;
      previous.hidden = false;
      previousNone.hidden = true;
    } else {
      previous.hidden = true;
      previousNone.hidden = false;
    }
    return load(url).then(function () {
      if (!state || state.frame.webp !== url) return;
      frame.src = url;
      box.dataset.state = "ready";
      frameStatus.textContent = "";
    }, function () {
      box.dataset.state = "failed";
      frameStatus.textContent = "This frame could not be loaded; reload the page to try again.";
    });
  }

  function setButtons() {
    var closed = !state || state.done || busy;
    buttons.forEach(function (button) { button.disabled = closed; });
  }

  function fixed(value) { return value === null || value === undefined ? "—" : value.toFixed(3); }

  function showResult(view) {
    var result = view.result, node = field("result");
    if (!result) { node.hidden = true; return; }
    node.hidden = false;
    text("outcome", result.success
      ? "You reached the mark in " + result.steps + " step" + (result.steps === 1 ? "" : "s") + "."
      : "The step budget ran out: " + result.steps + " steps, " + result.distances[result.distances.length - 1] + " from the mark.");
    var m = result.metrics;
    text("scores", "Your AVG " + fixed(m.avg) + " (TSR " + fixed(m.tsr) + ", SIR " + fixed(m.sir) + ", FCR " + fixed(m.fcr) + ", PCR " + fixed(m.pcr) + ")" +
      (view.stored ? ". Stored in your Human run." : view.practice ? ". Practice: you had played this scene at this level before, so it is not stored." : ". Not stored: sign in to keep your episodes.") +
      (result.reported_human_avg !== null ? " The paper's human participants averaged " + fixed(result.reported_human_avg) + " over all scenes and levels." : ""));
    var body = field("compare");
    body.textContent = "";
    var rows = [{ model: "You", avg: m.avg, success: result.success, steps: result.steps, you: true }].concat(result.models);
    rows.sort(function (a, b) { return (b.avg === null ? -99 : b.avg) - (a.avg === null ? -99 : a.avg); });
    rows.forEach(function (row) {
      var tr = document.createElement("tr");
      if (row.you) tr.className = "you";
      var th = document.createElement("th");
      th.scope = "row";
      if (row.replay) {
        var a = document.createElement("a");
        a.href = row.replay;
        a.textContent = row.model;
        th.appendChild(a);
      } else {
        th.textContent = row.model;
      }
      tr.appendChild(th);
      [fixed(row.avg), row.success ? "yes" : "no", String(row.steps)].forEach(function (value, i) {
        var td = document.createElement("td");
        if (i !== 1) td.className = "num";
        td.textContent = value;
        tr.appendChild(td);
      });
      body.appendChild(tr);
    });
    text("compare-caption", result.models.length
      ? "You and the " + result.models.length + " agents on the board in this scene at level " + view.level
      : "No agent on the board has played this scene at this level yet");
    var replay = field("replay");
    replay.hidden = !result.replay;
    if (result.replay) replay.href = result.replay;
  }

  function show(view) {
    state = view;
    root.hidden = false;
    root.dataset.ref = view.ref;
    root.dataset.index = String(view.index);
    root.dataset.done = view.done ? "true" : "false";
    text("title", view.scene + ", level " + view.level);
    text("meta", view.track + " track · budget " + view.max_steps + " steps · " +
      (view.stored ? "stored in your Human run" : view.practice ? "practice, not stored" : "for fun, not stored"));
    text("step", view.done ? "The episode has ended." : "Step " + (view.index + 1) + " of at most " + view.max_steps + ": choose your move.");
    text("task", view.task);
    text("history", view.history);
    text("instructions", view.instructions);
    showResult(view);
    setButtons();
    var url = new URL(location.href);
    url.searchParams.set("episode", view.ref);
    history.replaceState(null, "", url.pathname + url.search);
    return showFrames(view);
  }

  function fail(error) {
    busy = false;
    setButtons();
    text("message", error.message);
    if (error.status === 409 && state) {
      /* Another tab moved on, or the episode ended: show where it stands now. */
      fetch(state.state_url, { credentials: "same-origin" }).then(reply).then(function (view) {
        show(view);
        text("message", error.message);
      });
    }
  }

  function answer(option) {
    if (!state || state.done || busy) return;
    var started = performance.now();
    busy = true;
    setButtons();
    text("message", "");
    post(state.answer_url, { index: state.index, option: option }).then(reply).then(function (view) {
      var answered = performance.now();
      busy = false;
      return show(view).then(function () {
        requestAnimationFrame(function () {
          var total = performance.now() - started;
          root.dataset.lastPostMs = String(Math.round(answered - started));
          root.dataset.lastStepMs = String(Math.round(total));
          root.dataset.steps = String(Number(root.dataset.steps || 0) + 1);
          text("timing", "last move shown " + Math.round(total) + " ms after the key press");
        });
      });
    }, fail);
  }

  buttons.forEach(function (button) {
    button.addEventListener("click", function () { answer(Number(button.dataset.option)); });
  });

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    var target = event.target;
    if (target && /^(INPUT|SELECT|TEXTAREA)$/.test(target.tagName)) return;
    if (/^[1-6]$/.test(event.key)) {
      event.preventDefault();
      answer(Number(event.key));
    }
  });

  function start(params) {
    text("message", "");
    return post(config.startUrl, params).then(reply).then(function (view) {
      root.dataset.steps = "0";
      return show(view).then(function () {
        var first = root.querySelector("[data-option]");
        if (first && !view.done) root.scrollIntoView({ block: "start" });
      });
    }, function (error) {
      root.hidden = false;
      text("message", error.message);
    });
  }

  startForm.addEventListener("submit", function (event) {
    event.preventDefault();
    var params = {};
    new FormData(startForm).forEach(function (value, key) { if (key !== "csrfmiddlewaretoken") params[key] = value; });
    start(params);
  });

  root.querySelector('[data-action="again"]').addEventListener("click", function () {
    var params = {};
    new FormData(startForm).forEach(function (value, key) { if (key !== "csrfmiddlewaretoken") params[key] = value; });
    start(params);
  });

  var ref = new URLSearchParams(location.search).get("episode");
  if (ref && /^(e[0-9]+|p[0-9a-f]{32})$/.test(ref)) {
    fetch(config.playUrl + ref + "/", { credentials: "same-origin" }).then(reply).then(show, function (error) {
      root.hidden = false;
      text("message", error.message);
    });
  }
})();
