"""The benchmark version: one name for everything a score depends on.

A score is comparable with another only when both were measured the same way: the same scene
set, step budgets, camera, prompts and answer parser. ``BENCHMARK_VERSION`` names that whole
protocol. Every results bundle, frame key, run and score carries it, and results of different
versions are never ranked in one table.

- ``v1``: the first protocol (budget ``d0 + 10``, a lenient parser, a 45 degree camera).
  Retired: its step budget and parser differ from the reference, so its scores do not compare
  with the paper's rows.
- ``v2``: the reference's budgets per body, parser and camera, with prompts that still
  differed from the authors' (the answer format last, ``Choice: [n]``, missing notes) and a
  2,048-token output cap. Retired: what a model reads changed.
- ``v3``: the reference's protocol as ``docs/protocol.md`` describes it: v2's scenes, budgets,
  camera, dynamics and parser, with the reference's prompts (order, answer line, notes) and
  generation parameters (temperature 0, no seed, no small output cap). The paper's published
  rows are v3 rows.

Baselines read no prompt, so their episodes are the same under v2 and v3; and the pixels are
the same, so frames keep the version they were keyed with (``FRAME_VERSION``).
"""

from __future__ import annotations

BENCHMARK_VERSION = "v3"
KNOWN_VERSIONS = ("v3",)
"""Versions this engine can run and verify."""
RETIRED_VERSIONS = {
    "v2": "its prompts (order, answer line, notes) and its 2,048-token output cap differ from "
    "the reference's, so its scores do not compare with the paper's rows",
    "v1": "its step budget (d0 + 10) and answer parser differ from the paper's protocol",
}
"""Versions whose results stay browsable but that this engine no longer runs or verifies,
newest first (the order of the site's version menu)."""
FRAME_VERSION = "v2"
"""The version of what the pixels depend on (scene set, camera, renderer set-up), part of every
frame key. v3 changed only what a model reads, so frames rendered for v2 serve v3 unchanged;
bump this (not only ``BENCHMARK_VERSION``) when a change moves a pixel."""


def unknown_version_message(version: object) -> str:
    """Return why a bundle of ``version`` cannot be verified or imported by this engine."""
    if version in RETIRED_VERSIONS:
        reason = RETIRED_VERSIONS[str(version)]
        return (
            f"benchmark version {version!r} is retired ({reason}); this engine verifies "
            f"{', '.join(KNOWN_VERSIONS)} only: evaluate the model again with this version"
        )
    return (
        f"benchmark version {version!r} is unknown to this engine (it knows "
        f"{', '.join(KNOWN_VERSIONS)}); upgrade mirrorbench or use a bundle it wrote"
    )
