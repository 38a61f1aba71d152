"""Procedural human assets: four dressed mannequins and a floating human hand.

Everything is built from MuJoCo primitives (capsules, ellipsoids, boxes, cylinders and
spheres) added to an :class:`mujoco.MjSpec`, so the assets need no files and no downloads and
are the same on every call.

Conventions shared by every asset here:

* The world frame of the benchmark: x points forward (from the body towards the mirror), y to
  the body's left, z up, in metres.
* Every geom is purely visual (``contype = conaffinity = 0``); no joints are added, the
  renderer only runs ``mj_kinematics``.
* Every material and geom name starts with the asset id (``"male_0_skin"``,
  ``"mano_white_finger_index_1"``), so assets with different ids never clash in one spec.
  Adding the same id twice to one spec is an error (the names clash at compile time).
* No material reflects (``reflectance = 0``): MuJoCo only reflects in the first reflective
  geom, which must be the mirror.

Bodies stand on the floor (z = 0) at their parent's origin, face +x, and fit between
x = -0.15 and x = +0.15 (the body's depth in the benchmark is 0.3 m). Over the chest and belly
(z from 0.95 to 1.35, around the midline) their clothed front lies between x = 0.12 and
x = 0.15, so a flat mark placed at x = 0.15 sits on the clothes.

Hands are right hands with the fingers up (+z) and the palm facing -x (towards the body), so
the thumb is on the -y side; the parent's origin is the centre of the palm and the hand stays
within x = -0.05 .. +0.05 of it (the hand's depth in the benchmark is 0.1 m).

Layout: :mod:`.outfits` is the table of what each body wears (figure, colours, garments,
accessories); :mod:`.geometry` builds the mannequin from it part by part, with
:mod:`.accessories` for garment details and headwear; :mod:`.hands` builds the hand;
:mod:`.anatomy` holds the figures' proportions and :mod:`.builder` the geom builder.
"""

from __future__ import annotations

import mujoco

from simulation.assets.humans.builder import _Builder
from simulation.assets.humans.geometry import _build_mannequin
from simulation.assets.humans.hands import _build_hand
from simulation.assets.humans.outfits import _OUTFITS
from simulation.catalogue import BODIES, HANDS

__all__ = [
    "BODY_HALF_DEPTH",
    "FINGER_NAMES",
    "HAND_HALF_DEPTH",
    "HUMAN_BODY_DESCRIPTIONS",
    "HUMAN_BODY_HEIGHTS",
    "HUMAN_BODY_IDS",
    "HUMAN_HAND_DESCRIPTIONS",
    "HUMAN_HAND_IDS",
    "HUMAN_HAND_RGB",
    "add_human_body",
    "add_human_hand",
    "finger_geom_name",
]

HUMAN_BODY_IDS = ("male_0", "male_1", "female_0", "female_1")
"""The human bodies of the benchmark, in catalogue order."""

HUMAN_BODY_HEIGHTS: dict[str, float] = {
    "male_0": 1.75,
    "male_1": 1.75,
    "female_0": 1.68,
    "female_1": 1.68,
}
"""Height of each body in metres: floor to the top of the head (hats and hair not included)."""

BODY_HALF_DEPTH = 0.15
"""Every body fits in x = -0.15 .. +0.15 around its parent's origin."""

HUMAN_BODY_DESCRIPTIONS: dict[str, tuple[str, str]] = {
    i: (BODIES[i].description, BODIES[i].short_description) for i in HUMAN_BODY_IDS
}
"""Body id -> (full description, short description), inserted verbatim in the prompts."""

HUMAN_HAND_IDS = ("mano_white", "mano_brown", "mano_purple")
"""The human hands of the benchmark: one hand model in three tints."""

HUMAN_HAND_RGB: dict[str, tuple[int, int, int]] = {
    i: rgb for i in HUMAN_HAND_IDS if (rgb := HANDS[i].rgb) is not None
}
"""Hand id -> the 8-bit RGB colour of the whole hand."""

HUMAN_HAND_DESCRIPTIONS: dict[str, str] = {i: HANDS[i].description for i in HUMAN_HAND_IDS}
"""Hand id -> its description, inserted verbatim in the prompts."""

HAND_HALF_DEPTH = 0.05
"""Every hand fits in x = -0.05 .. +0.05 around its parent's origin."""

FINGER_NAMES = ("thumb", "index", "middle", "ring", "little")
"""The hand's fingers; see :func:`finger_geom_name` for how their geoms are named."""


def finger_geom_name(hand_id: str, finger: str, segment: int) -> str:
    """Return the geom name of one finger segment of a hand.

    Args:
        hand_id: One of :data:`HUMAN_HAND_IDS`.
        finger: One of :data:`FINGER_NAMES`.
        segment: 1 (next to the palm) to 3 (the fingertip).

    Returns:
        ``"{hand_id}_finger_{finger}_{segment}"``; every finger has exactly three segments.
    """
    return f"{hand_id}_finger_{finger}_{segment}"


def add_human_body(spec: mujoco.MjSpec, parent: mujoco.MjsBody, body_id: str) -> None:
    """Add a dressed human mannequin to ``parent``.

    The figure stands on the floor (z = 0 of ``parent``) at ``parent``'s origin, faces +x with
    its arms hanging at its sides, and fits in x = -0.15 .. +0.15. Its chest and belly front
    (z = 0.95 .. 1.35 near the midline) lies between x = 0.12 and 0.15. Its height is
    :data:`HUMAN_BODY_HEIGHTS` ``[body_id]`` and it is dressed as
    :data:`HUMAN_BODY_DESCRIPTIONS` ``[body_id]`` says. Only visual geoms and non-reflective
    materials are added, all named with the prefix ``f"{body_id}_"``.

    Args:
        spec: The spec that receives the materials.
        parent: The body that receives the geoms.
        body_id: One of :data:`HUMAN_BODY_IDS`.

    Raises:
        KeyError: ``body_id`` is not one of :data:`HUMAN_BODY_IDS`.
    """
    if body_id not in _OUTFITS:
        raise KeyError(f"unknown human body {body_id!r}; valid ids: {', '.join(HUMAN_BODY_IDS)}")
    _build_mannequin(_Builder(spec, parent, body_id), _OUTFITS[body_id])


def add_human_hand(spec: mujoco.MjSpec, parent: mujoco.MjsBody, hand_id: str) -> None:
    """Add a floating human right hand (no arm, a short wrist) to ``parent``.

    The fingers point up (+z) and the palm faces -x, so the thumb is on the -y side.
    ``parent``'s origin is the centre of the palm; the wrist is about 0.045 m below it and the
    tip of the middle finger about 0.15 m above it (0.19 m from wrist to fingertip); the palm
    is 0.085 m wide. The hand stays within x = -0.05 .. +0.05 of the origin. The whole hand has
    the colour :data:`HUMAN_HAND_RGB` ``[hand_id]`` (one non-reflective material named
    ``f"{hand_id}_skin"``); every finger has three capsule segments named by
    :func:`finger_geom_name`. All geoms are visual only and named with the prefix
    ``f"{hand_id}_"``.

    Args:
        spec: The spec that receives the material.
        parent: The body that receives the geoms (the renderer moves it).
        hand_id: One of :data:`HUMAN_HAND_IDS`.

    Raises:
        KeyError: ``hand_id`` is not one of :data:`HUMAN_HAND_IDS`.
    """
    if hand_id not in HUMAN_HAND_RGB:
        raise KeyError(f"unknown human hand {hand_id!r}; valid ids: {', '.join(HUMAN_HAND_IDS)}")
    _build_hand(_Builder(spec, parent, hand_id), HUMAN_HAND_RGB[hand_id])
