#!/usr/bin/env bash
# Builds the chart pages' plotly.js (static/vendor/plotly.min.js) from scripts/plotly: plotly.js's
# core and the trace types the charts draw (traces.json), from the packages package-lock.json
# pins with their hashes, installed in a throwaway folder (nothing of npm's stays here). Then
# static/css/plotly.css, its start-up styles, is made from it again.
#   scripts/plotly-bundle.sh          rebuild both (make plotly-bundle)
#   scripts/plotly-bundle.sh --check  rebuild in the throwaway folder and say whether the
#                                     committed bundle is what the lock and the traces make
# Needs node and npm (Debian's nodejs and npm) and the npm registry; the site does not.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.venv/bin}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp scripts/plotly/package.json scripts/plotly/package-lock.json scripts/plotly/traces.json \
  scripts/plotly/build.js "$work/"
(cd "$work" && npm ci --no-audit --no-fund --ignore-scripts --silent)
node "$work/build.js" "$work/plotly.min.js"
if [ "${1:-}" = "--check" ]; then
  if cmp -s "$work/plotly.min.js" static/vendor/plotly.min.js; then
    echo "plotly-bundle: static/vendor/plotly.min.js is what scripts/plotly makes"
  else
    echo "plotly-bundle: static/vendor/plotly.min.js differs from what scripts/plotly makes: run make plotly-bundle" >&2
    exit 1
  fi
else
  mkdir -p static/vendor
  cp "$work/plotly.min.js" static/vendor/plotly.min.js
  "$BIN/python" -m mirrorbench_site.static
fi
