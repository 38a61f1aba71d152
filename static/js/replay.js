/* The episode replay: one view per step, stepped by buttons, slider, keys and the chart.
   Every text from the model is set with textContent: a response is never read as HTML. */
(function () {
  "use strict";
  var root = document.querySelector("[data-replay]");
  var dataNode = document.getElementById("replay-data");
  if (!root || !dataNode) return;
  var data = JSON.parse(dataNode.textContent);
  var views = data.views;
  var last = views.length - 1;
  var field = function (name) { return document.querySelector('[data-field="' + name + '"]'); };
  var img = field("frame"), box = root.querySelector(".frame-box"), status = field("frame-status");
  var slider = field("slider"), speed = field("speed"), marker = field("marker");
  var playButton = root.querySelector('[data-action="play"]');
  var points = Array.prototype.slice.call(root.querySelectorAll("circle.point"));
  var current = Number(new URLSearchParams(location.search).get("step") || 0);
  if (!(current >= 0 && current <= last)) current = 0;
  var timer = null;
  var cache = {};

  function load(url) {
    /* One Image per URL: asking again for a frame being rendered waits for the same answer. */
    if (!cache[url]) {
      var image = new Image();
      image.decoding = "async";
      cache[url] = new Promise(function (resolve, reject) {
        var tries = 0;
        image.onload = function () { resolve(url); };
        image.onerror = function () {
          /* 503 while the server renders: ask again, a few times. */
          if (++tries > 5) { delete cache[url]; reject(url); return; }
          setTimeout(function () { image.src = url + (url.indexOf("?") < 0 ? "?" : "&") + "retry=" + tries; }, 1500);
        };
        image.src = url;
      });
    }
    return cache[url];
  }

  function preload(from) {
    for (var i = from + 1; i <= Math.min(last, from + 3); i++) load(views[i].frame.webp);
  }

  function text(name, value) { var node = field(name); if (node) node.textContent = value; }

  function cached(step) {
    /* The "From cache" row, present when some step of the episode was answered from the cache. */
    var node = field("cached");
    if (!node) return;
    if (!step || !step.cached) { node.textContent = step ? "no: asked for this run" : "—"; return; }
    var badge = document.createElement("span");
    badge.className = "badge cached";
    badge.textContent = "from cache";
    node.replaceChildren(badge, " an earlier run's answer, not counted again");
  }

  function show(index, push) {
    current = Math.max(0, Math.min(last, index));
    var view = views[current], step = view.step;
    var url = view.frame.webp;
    box.dataset.state = "loading";
    status.textContent = "Rendering this frame…";
    load(url).then(function (loaded) {
      if (views[current].frame.webp !== url) return;
      img.src = loaded;
      box.dataset.state = "ready";
      status.textContent = "";
    }, function () {
      if (views[current].frame.webp !== url) return;
      box.dataset.state = "failed";
      status.textContent = "This frame could not be loaded; try again later.";
    });
    img.alt = "The view at step " + current + ": the camera behind the body, the hand and the mirror";
    field("png").href = view.frame.png;
    field("png-link").href = view.frame.png;
    slider.value = String(current);
    text("position", String(current));
    text("caption", view.last ? "After the last step" : current === 0 ? "The start: the first view the agent saw" : "The view before step " + (current + 1));
    text("distance", view.distance === null ? "—" : String(view.distance));
    text("distance-unit", view.distance === 1 ? "step" : "steps");
    text("cell", "[" + view.cell.join(", ") + "]");
    field("prompt-link").href = data.promptUrl + "?step=" + Math.min(current, Math.max(0, last - 1));
    if (step) {
      text("option", step.option ? "option " + step.option + ": " + step.option_text : "no option could be read");
      text("executed", step.option === null ? "none (a bad response)" : step.executed ? "executed" : "refused: a collision");
      text("parse_error", step.parse_error || "—");
      text("says", step.says || "—");
      text("tokens", step.input_tokens === null ? "—" : step.input_tokens + " in, " + step.output_tokens + " out");
      text("latency", step.latency_s === null ? "—" : step.latency_s.toFixed(2) + " s");
      cached(step);
      text("response-summary", step.response.length + " characters" + (step.folded ? ", ending “" + step.tail + "” (open to read all)" : ""));
      text("response", step.response);
      field("response-box").open = !step.folded;
    } else {
      ["option", "parse_error", "says", "tokens", "latency"].forEach(function (name) { text(name, "—"); });
      cached(null);
      text("executed", "the episode has ended");
      text("response-summary", "No response after the last step");
      text("response", "");
      field("response-box").open = false;
    }
    var point = points[current];
    if (point && marker) {
      marker.setAttribute("cx", point.getAttribute("cx"));
      marker.setAttribute("cy", point.getAttribute("cy"));
    }
    points.forEach(function (p, i) { p.classList.toggle("current", i === current); });
    if (push !== false) {
      var params = new URLSearchParams(location.search);
      params.set("step", String(current));
      history.replaceState(null, "", location.pathname + "?" + params.toString() + location.hash);
    }
    preload(current);
    if (current === last) pause();
  }

  function play() {
    if (current === last) show(0);
    playButton.textContent = "Pause";
    clearInterval(timer);
    timer = setInterval(function () { show(current + 1); }, Number(speed.value));
  }
  function pause() {
    clearInterval(timer);
    timer = null;
    playButton.textContent = "Play";
  }
  function toggle() { if (timer) pause(); else play(); }

  root.addEventListener("click", function (event) {
    var target = event.target.closest("[data-action]");
    if (target) {
      var action = target.dataset.action;
      if (action === "first") show(0);
      else if (action === "prev") show(current - 1);
      else if (action === "next") show(current + 1);
      else if (action === "last") show(last);
      else if (action === "play") toggle();
      else if (action === "zoom") {
        var zoomed = box.classList.toggle("zoomed");
        target.setAttribute("aria-pressed", String(zoomed));
        target.textContent = zoomed ? "Fit" : "Zoom";
      }
      return;
    }
    var point = event.target.closest("circle.point");
    if (point) show(Number(point.dataset.step));
  });
  /* A click on the frame zooms instead of following the link to the PNG. */
  field("png").addEventListener("click", function (event) {
    event.preventDefault();
    root.querySelector('[data-action="zoom"]').click();
  });
  slider.addEventListener("input", function () { show(Number(slider.value)); });
  speed.addEventListener("change", function () { if (timer) play(); });
  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    var tag = (event.target.tagName || "").toLowerCase();
    if (tag === "input" && event.target !== slider || tag === "select" || tag === "textarea") return;
    var keys = { ArrowLeft: function () { show(current - 1); }, ArrowRight: function () { show(current + 1); },
      Home: function () { show(0); }, End: function () { show(last); }, " ": toggle };
    var handler = keys[event.key];
    if (!handler) return;
    if (event.target === slider && event.key !== " ") return;  /* the slider steps itself */
    if (event.key === " " && tag === "button") return;  /* a focused button handles space itself */
    event.preventDefault();
    handler();
  });
  show(current, false);
})();
