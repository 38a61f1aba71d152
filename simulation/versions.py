"""The benchmark version: one name for everything a score depends on.

A score is comparable with another only when both were measured the same way: the same scene
set, step budgets, camera, prompts and answer parser. ``BENCHMARK_VERSION`` names that whole
protocol. Every results bundle, frame key, run and score carries it, and results of different
versions are never ranked in one table.

- ``v1``: the first protocol (budget ``d0 + 10``, a lenient parser, a 45 degree camera).
  Retired: its step budget and parser differ from the reference, so its scores do not compare
  with the paper's rows.
- ``v2``: the reference's protocol as ``docs/protocol.md`` describes it (budgets per body,
  the reference parser, the reference camera, prompts in the reference's order). The paper's
  published rows are v2 rows.
"""

from __future__ import annotations

BENCHMARK_VERSION = "v2"
KNOWN_VERSIONS = ("v2",)
"""Versions this engine can run and verify."""
RETIRED_VERSIONS = {
    "v1": "its step budget (d0 + 10) and answer parser differ from the paper's protocol",
}
"""Versions whose results stay browsable but that this engine no longer runs or verifies."""


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
