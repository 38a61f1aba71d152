#!/usr/bin/env bash
# Refresh requirements.lock (`make lock`): every Python package `make install` puts in .venv,
# each pinned with the hashes of its files on the public index. It holds the runtime
# dependencies, the dev and inspect extras, and what installs the project itself (pip and the
# build backend named in pyproject.toml's [build-system]), resolved for CPython 3.11 on x86_64
# Linux, as CI runs. Wheels only: nothing is compiled at install time. The isaac extra (Python
# 3.12 and an RTX GPU) stays out: scripts/isaac-smoke.sh installs it in a venv of its own.
#
# Pins that pyproject.toml still allows are kept; UPGRADE=1 moves every pin to the newest
# release it allows. uv resolves; it is installed into the venv here, and `make install` does
# not need it (pip installs the lock with --require-hashes).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
LOCK=${LOCK:-requirements.lock}
"$VENV/bin/python" -m pip install --quiet 'uv>=0.9'

build=$("$VENV/bin/python" -c '
import tomllib
with open("pyproject.toml", "rb") as f:
    print("\n".join(tomllib.load(f)["build-system"]["requires"]))
')
args=(
  --extra dev
  --extra inspect
  --python-version 3.11
  --python-platform x86_64-unknown-linux-gnu
  --generate-hashes
  --no-build
  --custom-compile-command "make lock"
  --output-file "$LOCK"
)
[ "${UPGRADE:-0}" = 1 ] && args+=(--upgrade)
printf '%s\npip\n' "$build" | "$VENV/bin/uv" pip compile --quiet pyproject.toml - "${args[@]}"
echo "lock: $(grep -c '^[A-Za-z0-9]' "$LOCK") packages pinned in $LOCK"
