"""The benchmark's vocabulary: levels, tracks, metrics, conditions, episode statuses, table ids.

Defined once, here; the engine (prompts, metrics, bundles, the command line) and the site (model
choices, forms, tables, charts, filters) take their lists and labels from this module rather
than writing them out. Plain data, importable without Django. The tracks are the scene
catalogue's (``simulation.catalogue.Track``, which the engine below this package owns), and so
are the names of the conditions (``simulation.catalogue.CONDITIONS``: the renderer and the
dynamics act on them); every other list starts here.
"""

from __future__ import annotations

from typing import Final, get_args

from simulation.catalogue import CONDITIONS as SCENE_CONDITIONS
from simulation.catalogue import MAIN, Track, UnknownConditionError, check_condition

# Prompt levels.

LEVELS: Final[tuple[int, ...]] = (0, 1, 2, 3)
"""The prompt levels, from the one that discloses most (0: mirror, body and a reasoning
template) to the one that discloses least (3: neither mirror nor body)."""
LEVEL_SUMMARIES: Final[dict[int, str]] = {
    0: "mirror disclosed, with a reasoning template",
    1: "mirror disclosed, no template",
    2: "the mirror is never mentioned",
    3: "neither the mirror nor the body",
}
"""What each level discloses, in a few words (forms, legends)."""
LEVEL_KEYS: Final[tuple[str, ...]] = tuple(str(level) for level in LEVELS)
"""The levels as JSON objects and a run's tables key them: ``"0"`` to ``"3"``."""


def level_label(level: int | str) -> str:
    """Return the name of a level for people: ``Level 2``."""
    return f"Level {level}"


def level_short(level: int | str) -> str:
    """Return the short name of a level for axes and headings: ``L2``."""
    return f"L{level}"


def levels_text() -> str:
    """Return the levels as an error message lists them: ``0, 1, 2, 3``."""
    return ", ".join(LEVEL_KEYS)


def parse_levels(text: str) -> tuple[int, ...]:
    """Return the levels a comma-separated list names (``"2,0"`` -> ``(0, 2)``), sorted.

    Raises:
        ValueError: ``text`` names no level, or something that is not one (the message lists
            the levels).
    """
    try:
        levels = tuple(sorted({int(part) for part in text.split(",") if part.strip()}))
    except ValueError:
        levels = ()
    if not levels or any(level not in LEVELS for level in levels):
        raise ValueError(f"must be a comma-separated list of {levels_text()}, got {text!r}")
    return levels


# Tables and tracks.

OVERALL: Final = "overall"
"""The table that is the mean of the level tables (the paper's Table II), and the column that
pools both tracks."""
TABLES: Final[tuple[str, ...]] = (*LEVEL_KEYS, OVERALL)
"""A run's tables in page order: each level's (the paper's Tables IV-VII), then the overall one."""
PAPER_TABLES: Final[dict[str, str]] = {
    "0": "Table IV",
    "1": "Table V",
    "2": "Table VI",
    "3": "Table VII",
    OVERALL: "Table II",
}
"""The paper's table that each of ``TABLES`` reproduces."""


def table_label(table: str) -> str:
    """Return a table's name for people: ``Level 2``, ``Overall``."""
    return "Overall" if table == OVERALL else level_label(table)


SCENE_TRACKS: Final[tuple[str, ...]] = get_args(Track)
"""The tracks as the scene catalogue spells them: ``Human``, ``Robot``."""
TRACK_KEYS: Final[dict[str, str]] = {track.lower(): track for track in SCENE_TRACKS}
"""A table column's key -> the catalogue's track: ``{"human": "Human", "robot": "Robot"}``."""
TRACKS: Final[tuple[str, ...]] = (*TRACK_KEYS, OVERALL)
"""A table's columns: each track's, then the one that pools both."""


def track_label(track: str) -> str:
    """Return a table column's name for people: ``Human``, ``Robot``, ``Overall``."""
    return TRACK_KEYS.get(track, track.capitalize())


# Metrics.

EPISODE_METRICS: Final[tuple[str, ...]] = ("tsr", "sir", "fcr", "pcr")
"""The paper's four metrics (its Table I), in its order."""
AVG: Final = "avg"
METRICS: Final[tuple[str, ...]] = (*EPISODE_METRICS, AVG)
"""Every score a cell or an episode holds: the four metrics, then their mean."""
METRIC_NAMES: Final[dict[str, str]] = {
    "tsr": "Task Success Rate",
    "sir": "Step-wise Improvement Ratio",
    "fcr": "Final Completion Ratio",
    "pcr": "Peak Completion Ratio",
    AVG: "Average of the four metrics",
}
"""Each metric's full name."""


def metric_label(metric: str) -> str:
    """Return a metric's short name for people: ``TSR``."""
    return metric.upper()


# Episodes.

PENDING: Final = "pending"
RUNNING: Final = "running"
COMPLETED: Final = "completed"
"""Played to its end: the only status whose episodes count in the scores."""
ERROR: Final = "error"
"""Ended by a transport failure (the model could not be reached): left out of the scores."""
EPISODE_STATUSES: Final[dict[str, str]] = {
    PENDING: "Pending",
    RUNNING: "Running",
    COMPLETED: "Completed",
    ERROR: "Error (excluded)",
}
"""Every status an episode can have, with its label. A results bundle holds ``FINISHED`` ones."""
FINISHED: Final[tuple[str, ...]] = (COMPLETED, ERROR)
UNFINISHED: Final[tuple[str, ...]] = (PENDING, RUNNING)

SUCCESS: Final = "success"
FAILURE: Final = "failure"
CONFUSED: Final = "confused"
OUTCOMES: Final[dict[str, str]] = {
    SUCCESS: "Reached the mark",
    FAILURE: "Did not reach the mark",
    CONFUSED: "Mirror-confused",
    ERROR: "Ended in error",
}
"""What a finished episode came to, as lists filter and label them: a completed episode
succeeded or failed (and may also be mirror-confused); an ``error`` one never finished."""


def episode_outcome(status: str, success: bool) -> str | None:
    """Return the outcome of an episode (``success``, ``failure`` or ``error``); None while it
    is unfinished. Mirror confusion is a property of an episode's moves, not of its status."""
    if status == COMPLETED:
        return SUCCESS if success else FAILURE
    return ERROR if status == ERROR else None


# Conditions: the paper's protocol and its controls.

MAIN_CONDITION: Final = MAIN
"""The paper's protocol, the default condition: the only one the main tables rank."""
CONDITIONS: Final[tuple[str, ...]] = tuple(SCENE_CONDITIONS)
"""Every condition a run may play: ``main``, then the controls ``no-mirror``, ``mark-unseen``
and ``moved-mark`` (the same scenes, prompts, budgets, dynamics and metrics, one change each)."""
CONTROL_CONDITIONS: Final[tuple[str, ...]] = CONDITIONS[1:]
"""The control conditions, never ranked in the main tables."""
CONDITION_LABELS: Final[dict[str, str]] = {
    MAIN: "Main",
    "no-mirror": "No mirror",
    "mark-unseen": "Mark unseen",
    "moved-mark": "Moved mark",
}
"""Each condition's name for people."""
CONDITION_CHOICES: Final[tuple[tuple[str, str], ...]] = tuple(
    (name, CONDITION_LABELS.get(name, name)) for name in CONDITIONS
)
"""The conditions as (name, label) choices: a run's and the evaluation API's, one enum."""
CONDITION_SUMMARIES: Final[dict[str, str]] = {
    name: condition.summary for name, condition in SCENE_CONDITIONS.items()
}
"""What each condition changes, in a few words."""


def condition_label(condition: str) -> str:
    """Return a condition's name for people: ``Moved mark``."""
    return CONDITION_LABELS.get(condition, condition)


def conditions_text() -> str:
    """Return the conditions as an error message lists them: ``main, no-mirror, ...``."""
    return ", ".join(CONDITIONS)


def parse_condition(text: object) -> str:
    """Return the condition ``text`` names.

    Raises:
        ValueError: ``text`` names no condition (the message lists them).
    """
    try:
        return check_condition(text)
    except UnknownConditionError as exc:
        raise ValueError(str(exc)) from None
