#!/usr/bin/env bash
# Isaac Sim smoke test: render one scene headless with the Isaac backend and check that the
# mark's reflection lands where the MuJoCo frame has it. Needs an NVIDIA GPU with RT cores and
# Python 3.12 (pyenv provides it); installs '.[isaac]' into its own venv (tens of GB).
#
#   scripts/isaac-smoke.sh            # SCENE=... SIZE=512 TOLERANCE_PX=3 ISAAC_VENV=.venv-isaac
#
# Prints PASS or FAIL with the numbers; exits 0 on PASS, 1 on FAIL, 77 (SKIP) when this machine
# cannot run Isaac Sim, saying why. The frames and JSON it wrote stay in $OUT.
set -euo pipefail
cd "$(dirname "$0")/.."

SCENE=${SCENE:-male_0-mano_white-splash}
SIZE=${SIZE:-512}
TOLERANCE_PX=${TOLERANCE_PX:-3}
VENV=${ISAAC_VENV:-.venv-isaac}
OUT=${OUT:-$(mktemp -d /tmp/mirrorbench-isaac-smoke.XXXXXX)}
export OMNI_KIT_ACCEPT_EULA=${OMNI_KIT_ACCEPT_EULA:-YES}
mkdir -p "$OUT"

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; echo "output: $OUT"; exit 1; }

# 1. A GPU Isaac Sim renders on: any RTX, or a data-centre GPU with RT cores (L4, L40S, A10G...).
command -v nvidia-smi >/dev/null 2>&1 || skip "no NVIDIA GPU (nvidia-smi not found)"
gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null || true)
echo "$gpus" | tr ' -' '\n\n' | grep -Eq '^(RTX|(A10|A16|A40|L4|L20|L40|T4|T10)[A-Z]?)$' \
  || skip "no GPU with RT cores (nvidia-smi lists: ${gpus:-nothing}); Isaac Sim cannot render"

# 2. Python 3.12.
py312=""
if command -v pyenv >/dev/null 2>&1; then
  version=$(pyenv versions --bare 2>/dev/null | grep -E '^3\.12(\.|$)' | tail -1 || true)
  [ -n "$version" ] && py312="$(pyenv root)/versions/$version/bin/python3.12"
fi
[ -z "$py312" ] && py312=$(command -v python3.12 || true)
[ -x "$py312" ] || skip "no Python 3.12 (pyenv install 3.12, or put python3.12 on PATH)"

# 3. The project with its isaac extra, in its own venv.
if [ ! -x "$VENV/bin/python" ]; then
  "$py312" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --upgrade pip
echo "installing '.[isaac]' into $VENV (first run: a long download)"
"$VENV/bin/python" -m pip install --quiet -e '.[isaac]' || fail "pip install '.[isaac]' failed"
"$VENV/bin/mirrorbench" renderers
"$VENV/bin/mirrorbench" renderers --json | "$VENV/bin/python" -c \
  'import json,sys; r={b["name"]: b for b in json.load(sys.stdin)}; sys.exit(0 if r["isaac"]["available"] else 1)' \
  || fail "mirrorbench renderers says isaac is unavailable"

# 4. The MuJoCo frame's reflected mark, in a process of its own (no Kit).
export MUJOCO_GL=${MUJOCO_GL:-egl}
"$VENV/bin/python" scripts/isaac_smoke.py mujoco "$SCENE" "$SIZE" "$OUT" || fail "MuJoCo half failed"

# 5. The Isaac frames: with the mark, without it, and with the hand at the goal.
started=$(date +%s)
timeout 1800 "$VENV/bin/python" scripts/isaac_smoke.py isaac "$SCENE" "$SIZE" "$OUT" \
  >"$OUT/isaac.log" 2>&1 || { tail -40 "$OUT/isaac.log"; fail "Isaac half failed (log: $OUT/isaac.log)"; }
echo "Isaac Sim: started, loaded and rendered 3 frames in $(( $(date +%s) - started )) s"

# 6. Compare.
status=0
"$VENV/bin/python" - "$OUT" "$TOLERANCE_PX" "$SCENE" "$SIZE" <<'PY' || status=$?
import json, math, sys
out, tolerance, scene, size = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
mujoco = json.load(open(f"{out}/mujoco.json"))
isaac = json.load(open(f"{out}/isaac.json"))
print(f"scene {scene} at {size} px, renderer {isaac['version']}")
print(f"MuJoCo reflected mark: {mujoco['mark_pixels']} px, centroid {mujoco['mark_centroid']}")
print(f"Isaac reflected mark:  {isaac['mark_pixels']} px, centroid {isaac['mark_centroid']}")
print(f"USD camera projection of the mark's mirror image: {isaac['projected_mark']}")
print(f"hand at the goal changed {isaac['hand_moved_pixels']} px; image std {isaac['image_std']:.1f}")
problems = []
if isaac["image_std"] < 5:
    problems.append("the Isaac frame is blank")
if isaac["hand_moved_pixels"] == 0:
    problems.append("moving the hand prim changed nothing")
if not isaac["mark_centroid"]:
    problems.append("no reflected mark in the Isaac frame")
else:
    d = math.dist(isaac["mark_centroid"], mujoco["mark_centroid"])
    print(f"distance Isaac - MuJoCo: {d:.2f} px (tolerance {tolerance} px)")
    if d > tolerance:
        problems.append(f"the mark is {d:.2f} px from MuJoCo's")
print("FAIL: " + "; ".join(problems) if problems else "PASS")
sys.exit(1 if problems else 0)
PY
echo "output: $OUT"
exit $status
