/* Two replays side by side, stepped together: one set of controls, one slider, the same keys.
   View n of each episode is shown (its last view once it has ended). Every text from a model
   is set with textContent: a response is never read as HTML. */
(function () {
  "use strict";
  var root = document.querySelector("[data-compare]");
  var dataNode = document.getElementById("compare-data");
  if (!root || !dataNode) return;
  var data = JSON.parse(dataNode.textContent);
  var sides = ["a", "b"];
  var last = Math.max(data.a.views.length, data.b.views.length) - 1;
  var slider = root.querySelector('[data-field="slider"]');
  var speed = root.querySelector('[data-field="speed"]');
  var playButton = root.querySelector('[data-action="play"]');
  var marker = root.querySelector('[data-field="marker"]');
  var ticks = Array.prototype.slice.call(root.querySelectorAll("rect.tick"));
  var current = Number(new URLSearchParams(location.search).get("step") || 0);
  if (!(current >= 0 && current <= last)) current = 0;
  var timer = null;
  var cache = {};

  function field(side, name) { return root.querySelector('[data-side="' + side + '"] [data-field="' + name + '"]'); }
  function text(side, name, value) { var node = field(side, name); if (node) node.textContent = value; }

  function load(url) {
    /* One Image per URL; a frame still being rendered (503) is asked for again a few times. */
    if (!cache[url]) {
      var image = new Image();
      cache[url] = new Promise(function (resolve, reject) {
        var tries = 0;
        image.onload = function () { resolve(url); };
        image.onerror = function () {
          if (++tries > 5) { delete cache[url]; reject(url); return; }
          setTimeout(function () { image.src = url + (url.indexOf("?") < 0 ? "?" : "&") + "retry=" + tries; }, 1500);
        };
        image.src = url;
      });
    }
    return cache[url];
  }

  function showSide(side) {
    var views = data[side].views;
    var index = Math.min(current, views.length - 1);
    var view = views[index], step = view.step;
    var box = root.querySelector('[data-side="' + side + '"] .frame-box');
    var img = field(side, "frame"), status = field(side, "frame-status");
    var url = view.frame.webp;
    box.dataset.state = "loading";
    status.textContent = "Rendering this frame…";
    load(url).then(function (loaded) {
      if (views[Math.min(current, views.length - 1)].frame.webp !== url) return;
      img.src = loaded;
      box.dataset.state = "ready";
      status.textContent = "";
    }, function () {
      box.dataset.state = "failed";
      status.textContent = "This frame could not be loaded; try again later.";
    });
    img.alt = "Episode " + side.toUpperCase() + ", view " + index;
    text(side, "position", index < current ? index + " (ended)" : String(index));
    text(side, "distance", view.distance === null ? "—" : String(view.distance));
    if (step) {
      text(side, "option", step.option ? "option " + step.option + ": " + step.option_text : "no option could be read");
      text(side, "executed", step.option === null ? "none (a bad response)" : step.executed ? "executed" : "refused: a collision");
      text(side, "response-summary", step.response.length + " characters" + (step.folded ? ", ending “" + step.tail + "”" : ""));
      text(side, "response", step.response);
      field(side, "response-box").open = !step.folded;
    } else {
      text(side, "option", "—");
      text(side, "executed", "the episode has ended");
      text(side, "response-summary", "No response after the last step");
      text(side, "response", "");
      field(side, "response-box").open = false;
    }
    var dot = root.querySelector('circle.marker[data-side="' + side + '"]');
    var point = root.querySelectorAll('circle.point[data-side="' + side + '"]')[index];
    if (dot && point) { dot.setAttribute("cx", point.getAttribute("cx")); dot.setAttribute("cy", point.getAttribute("cy")); }
    for (var i = index + 1; i <= Math.min(views.length - 1, index + 3); i++) load(views[i].frame.webp);
  }

  function show(index, follow) {
    current = Math.max(0, Math.min(last, index));
    sides.forEach(showSide);
    slider.value = String(current);
    root.querySelector('[data-field="position"]').textContent = String(current);
    var differs = data.firstDifference !== null && current === data.firstDifference;
    root.querySelector('[data-field="difference"]').hidden = !differs;
    root.classList.toggle("at-difference", differs);
    if (marker && ticks[current]) marker.setAttribute("x", ticks[current].getAttribute("x"));
    if (follow !== false) {
      var params = new URLSearchParams(location.search);
      params.set("step", String(current));
      history.replaceState(null, "", location.pathname + "?" + params.toString() + location.hash);
    }
    if (current === last) pause();
  }

  function play() {
    if (current === last) show(0);
    playButton.textContent = "Pause";
    clearInterval(timer);
    timer = setInterval(function () { show(current + 1); }, Number(speed.value));
  }
  function pause() { clearInterval(timer); timer = null; playButton.textContent = "Play"; }
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
      else if (action === "difference") show(data.firstDifference);
      return;
    }
    var tick = event.target.closest("rect.tick, circle.point");
    if (tick) show(Number(tick.dataset.step));
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
    if (event.target === slider && event.key !== " ") return;
    if (event.key === " " && tag === "button") return;
    event.preventDefault();
    handler();
  });
  show(current, false);
})();
