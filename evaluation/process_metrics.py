"""Process metrics: what a model's written answers say, beside what its moves achieve (issue 36).

Two measurements, both read from the text of each step's response with fixed lexicons and
rules (no model judges another); they are measurements with a stated method, not ground truth,
and ``METHOD`` names the rule set so that a changed rule never passes for the same number.

**Mirror attribution** (levels 2 and 3, whose prompts never mention a mirror):

- *mentions the mirror*: the response names a mirror or a reflection (``mirror``, ``mirrors``,
  ``mirrored``, ``mirror image``, ``reflection``, ``reflections``, ``reflected``), one mention
  at least that is not denied (``no mirror``, ``not a reflection``, ``without a mirror``,
  ``isn't a mirror``, ``I don't see any mirror or reflection``: a denial within the four words
  before it, in the same clause: no punctuation between).
- *says the reflection is its own*: the response mentions the mirror as above and ties the
  reflection to itself: ``my reflection``, ``my own reflection``, ``my mirror image``,
  ``the reflection of me``/``of myself``/``of my body``, ``I see myself``, ``myself in the
  mirror``, ``my body in the mirror``, ``the mirror shows my ...``, ``the reflected body is
  me``/``mine``/``my own``, ``the figure in the mirror is me``, ``that is me``. A response that
  also disowns it (``not me``, ``not my reflection``, ``someone else``, ``another person``,
  ``another robot``, ...) does not count. ``my body`` alone does not count: level 2's prompt
  says "your body" itself.

The shares are over the level's responses with any text (a step with no response at all, a
refused one, is left out).

**Reasoning-action consistency** (every level): the reasoning is the text before the response's
``Choice`` line (``evaluation.parsing``'s pattern); a response without one states nothing. The
stated direction is the last move phrase in the reasoning that is not denied: a verb of motion
(``move``, ``go``, ``head``, ``step``, ``shift``, ``push``, ``bring``, ``reach``, ``choose``,
``pick``, ``select``) followed within six words of the same clause by ``up``/``upward(s)``,
``down``/``downward(s)``, ``left``, ``right``, ``forward(s)`` or ``backward(s)``/``back``; a denial
(``not``, ``n't``, ``never``, ``avoid``, ``no``, ``instead of``, ``rather than``) within the
two words before the verb, or ``not``/``never`` between the verb and the direction, cancels the
phrase (``not forward; go up`` states up). The step is consistent when the chosen option is
that direction (``simulation.dynamics.Action``: 1 up, 2 down, 3 left, 4 right, 5 forward,
6 backward), a contradiction when it is another option; the share is over the steps with both
a stated direction and a chosen option.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from evaluation.vocabulary import COMPLETED, LEVELS, OVERALL, TRACK_KEYS

METHOD = "lexicon-v1"
"""The rule set's name, written with every result (change it with any rule)."""

ATTRIBUTION_LEVELS = (2, 3)
"""The levels whose prompts never mention a mirror: where mentioning one is the model's own."""

_MIRROR = re.compile(r"\b(?:mirror(?:s|ed)?|reflections?|reflected)\b", re.IGNORECASE)
_DENIAL_BEFORE = re.compile(
    r"(?:\b(?:no|not|never|without|isn't|aren't|wasn't|nor)|n't)(?:[ \t]+[\w']+){0,4}[ \t]*$",
    re.IGNORECASE,
)
_OWN = re.compile(
    r"|".join(
        [
            r"\bmy (?:own )?(?:reflection|reflected|mirror[- ]image|image in the mirror)",
            r"\breflection (?:of|is) (?:me|myself|mine|my)\b",
            r"\b(?:see|seeing|recogni[sz]e|recogni[sz]ing) myself\b",
            r"\bmyself in the (?:mirror|reflection)",
            r"\bmy (?:own )?(?:body|chest|torso|hand|arm|face)\b[^.\n]{0,30}\b(?:in|on) the "
            r"(?:mirror|reflection)",
            r"\b(?:mirror|reflection)\b[^.\n]{0,20}\b(?:shows?|showing) (?:me|myself|my)\b",
            r"\b(?:reflected|mirrored) (?:body|figure|person|robot|humanoid|image|self)\b[^.\n]"
            r"{0,40}\b(?:is|are|must be|represents?) (?:me|mine|myself|my)\b",
            r"\b(?:body|figure|person|robot|humanoid|agent) (?:in|inside) the (?:mirror|reflection)"
            r"\b[^.\n]{0,40}\b(?:is|must be|represents?) (?:me|mine|myself|my)\b",
            r"\b(?:that|this|it)(?: is|'s) (?:me|myself)\b",
        ]
    ),
    re.IGNORECASE,
)
_DISOWN = re.compile(
    r"\bnot (?:me|mine|myself|my (?:own )?(?:body|reflection))\b|\bsomeone else\b|"
    r"\b(?:another|other|a different) (?:person|agent|robot|body|individual|humanoid)\b",
    re.IGNORECASE,
)
_CHOICE = re.compile(r"choice:?\s*\[?\d", re.IGNORECASE)
"""Where the answer's ``Choice`` line starts (``evaluation.parsing``'s pattern)."""
_DIRECTIONS: dict[str, int] = {
    "up": 1,
    "upward": 1,
    "upwards": 1,
    "down": 2,
    "downward": 2,
    "downwards": 2,
    "left": 3,
    "right": 4,
    "forward": 5,
    "forwards": 5,
    "backward": 6,
    "backwards": 6,
    "back": 6,
}
_MOVE = re.compile(
    r"\b(?:move|moving|moves|go|going|head|heading|step|stepping|shift|shifting|push|pushing|"
    r"bring|bringing|reach|reaching|choose|choosing|pick|select)\b((?:[ \t]+[\w']+){0,6}?)[ \t]+"
    r"(upwards?|downwards?|up|down|left|right|forwards?|backwards?|back)\b",
    re.IGNORECASE,
)
_MOVE_DENIAL = re.compile(
    r"(?:\b(?:not|never|avoid|avoiding|no|instead of|rather than)|n't)(?:[ \t]+[\w']+){0,2}[ \t]*$",
    re.IGNORECASE,
)


def mentions_mirror(text: str) -> bool:
    """Whether ``text`` names a mirror or a reflection that it does not deny."""
    return any(
        not _DENIAL_BEFORE.search(text[max(0, m.start() - 40) : m.start()])
        for m in _MIRROR.finditer(text)
    )


def claims_own_reflection(text: str) -> bool:
    """Whether ``text`` mentions the mirror and says the reflection shows itself (and does not
    also disown it)."""
    return mentions_mirror(text) and bool(_OWN.search(text)) and not _DISOWN.search(text)


def reasoning(text: str) -> str | None:
    """Return the text before the response's ``Choice`` line, or None when it has none."""
    match = _CHOICE.search(text)
    return text[: match.start()] if match else None


def stated_direction(text: str) -> int | None:
    """Return the option of the last direction the reasoning states (1-6), or None."""
    before = reasoning(text)
    if before is None:
        return None
    stated = None
    for match in _MOVE.finditer(before):
        if _MOVE_DENIAL.search(before[max(0, match.start() - 30) : match.start()]):
            continue
        if re.search(r"\b(?:not|never|n't)\b", match.group(1), re.IGNORECASE):
            continue
        stated = _DIRECTIONS[match.group(2).lower()]
    return stated


@dataclass(frozen=True)
class StepFlags:
    """What one response says: a mirror mention, its own reflection, a stated direction, and
    whether the chosen option contradicts it."""

    mirror: bool
    own: bool
    stated: int | None
    contradiction: bool

    def as_dict(self) -> dict[str, Any]:
        return {
            "mirror": self.mirror,
            "own": self.own,
            "stated": self.stated,
            "contradiction": self.contradiction,
        }


def step_flags(response: str | None, option: int | None) -> StepFlags:
    """Return what a step's ``response`` says about the mirror and whether ``option`` (the
    parsed choice, None for a bad response) contradicts its stated direction."""
    text = response or ""
    stated = stated_direction(text)
    return StepFlags(
        mirror=mentions_mirror(text),
        own=claims_own_reflection(text),
        stated=stated,
        contradiction=stated is not None and option is not None and option != stated,
    )


@dataclass
class ProcessCounts:
    """Counts behind the process metrics of one table cell."""

    responses: int = 0
    mirror: int = 0
    own: int = 0
    stated: int = 0
    consistent: int = 0

    def add(self, flags: StepFlags, option: int | None) -> None:
        self.responses += 1
        self.mirror += flags.mirror
        self.own += flags.own
        if flags.stated is not None and option is not None:
            self.stated += 1
            self.consistent += option == flags.stated

    def as_dict(self, *, attribution: bool) -> dict[str, Any]:
        """The counts and shares; the attribution shares are None where ``attribution`` is
        false (levels whose prompts mention the mirror)."""

        def share(part: int, whole: int) -> float | None:
            return part / whole if whole else None

        return {
            "responses": self.responses,
            "mirror_mentions": self.mirror if attribution else None,
            "mirror_share": share(self.mirror, self.responses) if attribution else None,
            "own_reflection": self.own if attribution else None,
            "own_share": share(self.own, self.responses) if attribution else None,
            "stated_direction": self.stated,
            "consistent": self.consistent,
            "consistency": share(self.consistent, self.stated),
        }


@dataclass
class _Tables:
    cells: dict[tuple[str, str], ProcessCounts] = field(default_factory=dict)

    def cell(self, level: str, track: str) -> ProcessCounts:
        return self.cells.setdefault((level, track), ProcessCounts())


ATTRIBUTION = "L2+L3"
"""The pooled key of the attribution levels in ``process_json``."""


def process_json(episodes: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Return the process metrics of a bundle's completed episodes as JSON.

    ``{"method": METHOD, "levels": {"0": {"overall": {...}, "human": ..., "robot": ...}, ...},
    "L2+L3": {...}, "overall": {...}}``: each cell as ``ProcessCounts.as_dict``; the
    attribution shares only at levels 2 and 3 and their pool ``L2+L3``.
    """
    tables = _Tables()
    for episode in episodes:
        if episode.get("status", COMPLETED) != COMPLETED:
            continue
        level = int(episode["level"])
        track = str(episode["track"]).lower()
        for step in episode.get("steps", []):
            response = step.get("response")
            if not response:
                continue
            option = step.get("option")
            flags = step_flags(response, option)
            keys = [str(level), OVERALL]
            if level in ATTRIBUTION_LEVELS:
                keys.append(ATTRIBUTION)
            for key in keys:
                for cell_track in (OVERALL, track):
                    tables.cell(key, cell_track).add(flags, option)

    def row(key: str, attribution: bool) -> dict[str, Any]:
        return {
            track: tables.cell(key, track).as_dict(attribution=attribution)
            for track in (OVERALL, *TRACK_KEYS)
        }

    return {
        "method": METHOD,
        "levels": {str(level): row(str(level), level in ATTRIBUTION_LEVELS) for level in LEVELS},
        ATTRIBUTION: row(ATTRIBUTION, True),
        OVERALL: row(OVERALL, False),
    }
