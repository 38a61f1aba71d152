#!/usr/bin/env bash
# System packages the test suite uses as real parts: Debian's Chromium headless shell for the
# browser tests (and the full browser, which the play benchmark drives),
# Redis and PostgreSQL for the production paths (the tests start their own servers).
# Installed when missing and we are root or have sudo; otherwise the command is printed, and the
# tests that need a missing part skip, saying so (under CI=true they fail: tests/parts.py).
set -euo pipefail
# axe-core for the accessibility checks of the browser tests, from npm into the virtual
# environment (tests inject it into the page; nothing is fetched at run time).
AXE_DIR=.venv/axe
if [ ! -f "$AXE_DIR/node_modules/axe-core/axe.min.js" ]; then
  if command -v npm >/dev/null 2>&1; then
    mkdir -p "$AXE_DIR"
    npm install --no-audit --no-fund --silent --prefix "$AXE_DIR" axe-core@4 >/dev/null \
      || echo "test-deps: could not install axe-core from npm; the accessibility test will skip (fail under CI=true)" >&2
  else
    echo "test-deps: npm is missing; the accessibility test will skip, or fail under CI=true (apt-get install npm)" >&2
  fi
fi

packages=(chromium chromium-headless-shell redis-server postgresql)
missing=()
command -v dpkg-query >/dev/null 2>&1 || exit 0
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
cmd="apt-get update && apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -eq 0 ]; then
  echo "test-deps: installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive bash -c "$cmd" >/dev/null
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  echo "test-deps: installing ${missing[*]} with sudo"
  sudo DEBIAN_FRONTEND=noninteractive bash -c "$cmd" >/dev/null
else
  echo "test-deps: the browser, Redis and PostgreSQL tests need: ${missing[*]}. Run as root: $cmd" >&2
fi

