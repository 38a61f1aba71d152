"""Behaviour of a run: mirror-self confusion, bad responses and collisions.

The paper's Fig. 4 failure mode is a model that steers the real hand towards the mark's mirror
image instead of the mark. Its distance trajectory only says the hand went the wrong way; the
hand cells of the steps say where it went. Pure functions over episode records as a results
bundle holds them (``evaluation.bundle.episode_record``), no Django.

Per episode, over its steps (each step's ``option``, ``executed`` and ``hand_cell``, the cell
after the step; the hand starts at the grid origin):

* ``confusion_rate``: the share of executed moves that brought the hand closer (Manhattan, in
  grid steps) to the mark's mirror image while taking it farther from the goal. The mirror
  image is the goal reflected in the mirror's face, as ``MirrorConfusedAgent`` aims at it
  (``evaluation.agents.mirror_image_cell``). It differs from the goal only in x and lies
  beyond the glass, so in practice a confused move is an executed forward move; moves along y
  and z bring the hand closer to both or to neither.
* ``bad_response_rate``: the share of steps whose answer did not parse (``option`` None).
* ``collision_rate``: the share of answered steps whose move was refused (``executed`` False).
* ``mirror_confused``: the episode is dominated by the confusion: at least
  ``CONFUSED_MIN_MOVES`` executed moves and ``confusion_rate >= CONFUSED_THRESHOLD``.

A rate with nothing to count (no executed move, no answered step) is None, not 0.

Aggregates pool the way ``evaluation.metrics`` pools SIR, the other share-of-steps measure: a
level cell (Human, Robot, Overall) sums the counts of its completed episodes and divides, so a
long episode weighs more than a short one, and Overall pools both tracks' episodes. The
``overall`` row is the mean of the four level cells, rate by rate (as Table II is the mean of
the level tables); its episode counts are sums. Only completed episodes count, as in the
metrics: an ``"error"`` episode is left out.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from evaluation.agents import mirror_image_cell
from evaluation.vocabulary import COMPLETED, LEVELS, OVERALL, SCENE_TRACKS, TRACK_KEYS, TRACKS
from simulation.catalogue import Scene, get_scene
from simulation.dynamics import ORIGIN, Vec3, distance_steps

CONFUSED_THRESHOLD = 0.5
"""An episode is ``mirror_confused`` when at least this share of its executed moves is confused."""
CONFUSED_MIN_MOVES = 3
"""...and it executed at least this many moves: two forward moves out of two prove little."""


@dataclass(frozen=True)
class EpisodeBehaviour:
    """The behaviour counts of one episode, and the rates they give."""

    steps: int
    """Steps taken, bad responses included."""
    executed_moves: int
    answered_steps: int
    """Steps whose answer parsed (an option 1 to 6), executed or refused."""
    confused_moves: int
    """Executed moves closer to the mirror image and farther from the goal."""
    bad_responses: int
    collisions: int
    """Answered steps whose move was refused."""

    @property
    def confusion_rate(self) -> float | None:
        """Confused moves over executed moves; None without an executed move."""
        return _share(self.confused_moves, self.executed_moves)

    @property
    def bad_response_rate(self) -> float | None:
        """Bad responses over steps; None without a step."""
        return _share(self.bad_responses, self.steps)

    @property
    def collision_rate(self) -> float | None:
        """Refused moves over answered steps; None without an answered step."""
        return _share(self.collisions, self.answered_steps)

    @property
    def mirror_confused(self) -> bool:
        """Whether the episode is dominated by mirror-self confusion (see the module doc)."""
        rate = self.confusion_rate
        return (
            self.executed_moves >= CONFUSED_MIN_MOVES
            and rate is not None
            and rate >= CONFUSED_THRESHOLD
        )


class BehaviourCell(TypedDict):
    """The behaviour of one track at one level (or over all levels, in ``overall``)."""

    episodes: int
    mirror_confused_episodes: int
    confusion_rate: float | None
    bad_response_rate: float | None
    collision_rate: float | None


BehaviourTable = dict[str, BehaviourCell | None]
"""Track name (``TRACKS``) -> its cell, or None when the track has no completed episode."""


class BehaviourJSON(TypedDict):
    """A run's behaviour: the ``behaviour`` section of ``mirrorbench score --json``."""

    levels: dict[str, BehaviourTable]
    """Keyed ``"0"`` to ``"3"``, like the level tables."""
    overall: BehaviourTable
    """The mean of the level cells, rate by rate; episode counts summed."""


def episode_behaviour(record: Mapping[str, Any], scene: Scene | None = None) -> EpisodeBehaviour:
    """Return the behaviour counts of one episode record.

    Args:
        record: An episode record of a results bundle; its steps need ``option``,
            ``executed`` and ``hand_cell``.
        scene: The record's scene; looked up by ``record["scene_id"]`` when not given.

    Raises:
        UnknownSceneError: If the scene id is not in the scene set.
    """
    scene = scene or get_scene(record["scene_id"])
    image = mirror_image_cell(scene)
    steps: Sequence[Mapping[str, Any]] = record["steps"]
    executed = confused = bad = collisions = 0
    before: Vec3 = ORIGIN
    for step in steps:
        after: Vec3 = (step["hand_cell"][0], step["hand_cell"][1], step["hand_cell"][2])
        if step["option"] is None:
            bad += 1
        elif not step["executed"]:
            collisions += 1
        else:
            executed += 1
            towards_image = _manhattan(after, image) < _manhattan(before, image)
            from_goal = distance_steps(scene, after) > distance_steps(scene, before)
            confused += towards_image and from_goal
        before = after
    return EpisodeBehaviour(
        steps=len(steps),
        executed_moves=executed,
        answered_steps=len(steps) - bad,
        confused_moves=confused,
        bad_responses=bad,
        collisions=collisions,
    )


def behaviour_cell(episodes: Sequence[EpisodeBehaviour]) -> BehaviourCell | None:
    """Return the pooled cell of some episodes (counts summed, then divided); None if none."""
    if not episodes:
        return None
    pooled = EpisodeBehaviour(
        steps=sum(e.steps for e in episodes),
        executed_moves=sum(e.executed_moves for e in episodes),
        answered_steps=sum(e.answered_steps for e in episodes),
        confused_moves=sum(e.confused_moves for e in episodes),
        bad_responses=sum(e.bad_responses for e in episodes),
        collisions=sum(e.collisions for e in episodes),
    )
    return {
        "episodes": len(episodes),
        "mirror_confused_episodes": sum(e.mirror_confused for e in episodes),
        "confusion_rate": pooled.confusion_rate,
        "bad_response_rate": pooled.bad_response_rate,
        "collision_rate": pooled.collision_rate,
    }


def behaviour_json(records: Iterable[Mapping[str, Any]]) -> BehaviourJSON:
    """Return a run's behaviour per level and track, and its overall row.

    Only completed episodes count. A level cell pools its episodes' counts; Overall pools
    both tracks. The ``overall`` row is, per track, the mean of the four level cells' rates
    (None when the track has no episode at some level, or a rate is None at some level) with
    the episode counts summed.

    Raises:
        ValueError: If a completed episode's track or level is not one of the protocol's.
        UnknownSceneError: If a completed episode's scene is not in the scene set.
    """
    by_level: dict[int, list[tuple[str, EpisodeBehaviour]]] = {level: [] for level in LEVELS}
    for record in records:
        if record["status"] != COMPLETED:
            continue
        track, level = record["track"], record["level"]
        if track not in SCENE_TRACKS or level not in LEVELS:
            raise ValueError(
                f"{record['scene_id']}: track {track!r} or level {level!r} is not the protocol's"
            )
        by_level[level].append((track, episode_behaviour(record)))
    levels: dict[str, BehaviourTable] = {}
    for level, episodes in by_level.items():
        levels[str(level)] = {
            **{
                key: behaviour_cell([e for t, e in episodes if t == track])
                for key, track in TRACK_KEYS.items()
            },
            OVERALL: behaviour_cell([e for _, e in episodes]),
        }
    overall: BehaviourTable = {
        track: _mean_cell([table[track] for table in levels.values()]) for track in TRACKS
    }
    return {"levels": levels, "overall": overall}


def _mean_cell(cells: Sequence[BehaviourCell | None]) -> BehaviourCell | None:
    """Return the mean of level cells rate by rate, counts summed; None if a cell is None."""
    present = [cell for cell in cells if cell is not None]
    if len(present) < len(cells):
        return None
    return {
        "episodes": sum(cell["episodes"] for cell in present),
        "mirror_confused_episodes": sum(cell["mirror_confused_episodes"] for cell in present),
        "confusion_rate": _mean([cell["confusion_rate"] for cell in present]),
        "bad_response_rate": _mean([cell["bad_response_rate"] for cell in present]),
        "collision_rate": _mean([cell["collision_rate"] for cell in present]),
    }


def _mean(values: Sequence[float | None]) -> float | None:
    """Return the mean, or None if any value is None."""
    present = [v for v in values if v is not None]
    if len(present) < len(values):
        return None
    return math.fsum(present) / len(present)


def _manhattan(a: Vec3, b: Vec3) -> int:
    return abs(a[0] - b[0]) + abs(a[1] - b[1]) + abs(a[2] - b[2])


def _share(count: int, total: int) -> float | None:
    return count / total if total else None
