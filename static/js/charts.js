// MirrorBench charts: fetch each chart's plotly figure from the chart API and draw it with the
// plotly.js of the plotly package (static/vendor). Every chart's numbers are in the table below
// it, so a page without JavaScript, or a chart that fails, still says everything.
(function () {
  "use strict";
  var NARROW = 600;

  function merge(target, changes) {
    Object.keys(changes).forEach(function (key) {
      var value = changes[key];
      if (value && typeof value === "object" && !Array.isArray(value) &&
          target[key] && typeof target[key] === "object" && !Array.isArray(target[key])) {
        merge(target[key], value);
      } else {
        target[key] = value;
      }
    });
    return target;
  }

  function svgButton(filename) {
    return {
      name: "downloadSvg",
      title: "Download plot as an SVG",
      icon: Plotly.Icons.disk,
      click: function (gd) { Plotly.downloadImage(gd, { format: "svg", filename: filename }); }
    };
  }

  function failed(plot, message) {
    plot.dataset.chartState = "failed";
    plot.textContent = "";
    var p = document.createElement("p");
    p.className = "chart-status";
    p.textContent = "The chart could not be drawn (" + message + "); its numbers are in the table below.";
    plot.appendChild(p);
  }

  function draw(plot) {
    if (typeof Plotly === "undefined") { failed(plot, "plotly.js did not load"); return; }
    fetch(plot.dataset.chartUrl, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (response) {
        if (!response.ok) { throw new Error("HTTP " + response.status); }
        return response.json();
      })
      .then(function (chart) {
        var layout = chart.figure.layout;
        if (plot.clientWidth < NARROW && chart.narrow) { merge(layout, chart.narrow); }
        var config = chart.config;
        config.modeBarButtonsToAdd = [svgButton(config.toImageButtonOptions.filename)];
        plot.textContent = "";
        return Plotly.newPlot(plot, chart.figure.data, layout, config);
      })
      .then(function () { plot.dataset.chartState = "drawn"; })
      .catch(function (error) { failed(plot, error.message); });
  }

  document.querySelectorAll("[data-chart-url]").forEach(draw);
})();
