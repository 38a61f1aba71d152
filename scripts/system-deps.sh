#!/usr/bin/env bash
# Install the system libraries MuJoCo needs to render without a display (Mesa EGL + OSMesa).
# Installs them when missing and we are root or have sudo; otherwise prints the command.
set -euo pipefail
packages=(libegl1 libegl-mesa0 libgl1-mesa-dri libosmesa6 libglu1-mesa)
missing=()
if command -v dpkg-query >/dev/null 2>&1; then
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
else
  echo "system-deps: not a Debian/Ubuntu system; make sure Mesa's EGL or OSMesa is installed." >&2
  exit 0
fi
[ ${#missing[@]} -eq 0 ] && exit 0
cmd="apt-get update && apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -eq 0 ]; then
  echo "system-deps: installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive bash -c "$cmd" >/dev/null
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  echo "system-deps: installing ${missing[*]} with sudo"
  sudo DEBIAN_FRONTEND=noninteractive bash -c "$cmd" >/dev/null
else
  echo "system-deps: headless rendering needs: ${missing[*]}. Run as root:" >&2
  echo "  sudo bash -c '$cmd'" >&2
  exit 1
fi
