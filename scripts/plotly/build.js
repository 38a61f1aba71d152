// Builds static/vendor/plotly.min.js: plotly.js's core and the trace types in traces.json, no
// more (the full bundle is 4.8 MB, most of it maps, 3D and WebGL that no chart draws).
// Run through `make plotly-bundle` (scripts/plotly-bundle.sh), which installs the locked
// packages first. The output depends only on package-lock.json, traces.json and this file.
'use strict';
const fs = require('fs');
const path = require('path');
const esbuild = require('esbuild');

const traces = JSON.parse(fs.readFileSync(path.join(__dirname, 'traces.json'), 'utf8'));
const version = require('plotly.js/package.json').version;
const out = process.argv[2];

// scatter is in plotly.js's core; the others are registered as its custom bundles do.
const extra = traces.filter((t) => t !== 'scatter');
const entry = [
  "var Plotly = require('plotly.js/lib/core');",
  `Plotly.register([${extra.map((t) => `require('plotly.js/lib/${t}')`).join(', ')}]);`,
  'module.exports = Plotly;',
].join('\n');

const result = esbuild.buildSync({
  stdin: { contents: entry, resolveDir: __dirname, sourcefile: 'mirrorbench-plotly.js' },
  bundle: true,
  minify: true,
  format: 'iife',
  globalName: 'Plotly',
  target: 'es2016',
  // As plotly.js's own build: no Node globals in a browser.
  define: { global: 'window', 'define.amd': 'false', 'process.env.NODE_DEBUG': 'false' },
  alias: { stream: 'stream-browserify' },
  // maplibre's stylesheet, required only when a map trace registers: no chart draws maps.
  loader: { '.css': 'empty' },
  legalComments: 'eof',
  write: false,
  logLevel: 'warning',
});
const banner =
  `/*! plotly.js v${version} (MIT, Plotly, Inc.): MirrorBench's bundle of traces ` +
  `${JSON.stringify(traces)}, made by \`make plotly-bundle\` from scripts/plotly. */\n`;
fs.writeFileSync(out, banner + result.outputFiles[0].text);
console.log(`plotly-bundle: wrote ${out} (plotly.js ${version}, traces ${traces.join(', ')})`);
