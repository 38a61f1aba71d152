"""The four prompt levels (``PROMPT_VERSION = "v3"``).

Each level discloses exactly the facts ``docs/protocol.md`` lists, no more and no fewer:

- L0: the body (full description); the camera behind it, which sees only part of it; the mirror
  in front, which shows its front; the mark on the front of the body, visible only in the
  mirror; the goal of reaching it physically with the real hand; the real hand looks larger
  than its reflection, may be hidden by the body, and can then be placed from the mirror and
  the history. A step-by-step reasoning template comes before the options.
- L1: the body, the camera behind it and the mirror; the mark is only said to be attached to
  the body, with the condition "seen only in the mirror means on the side facing it"; the
  visual-reasoning sentence; ten notes.
- L2: the body, the camera behind it, and that the mark is attached to the body; the
  visual-reasoning sentence; never a mirror or a reflection; six notes.
- L3: only the hand, a fixed camera and the mark; neither the mirror nor the body; three notes.

Every step sends a system message (a benign virtual simulation) and one user message whose
parts come in the reference's order:

1. the level's fixed text (:func:`task_text`): track sentence, setting, body, hand, mark, goal,
   and the sentence that announces the inputs;
2. the previous moves with their execution feedback (:func:`status_text`);
3. the previous image, then the current image, each after a short label;
4. :func:`instructions_text`: at L0 the reasoning template, then the numbered options, the
   answer format (a ``Thought:`` part, then the literal line :data:`CHOICE_LINE`), and the
   numbered notes, whose last two are the step budget and the benign note.

The message ends with the notes, not with the answer format. :data:`CHOICE_LINE` is a format
the parser reads, not prose: a model that echoes it answers option 1, as in the reference.

The runner leaves responses that could not be parsed out of the history (and does not keep
their image as the previous image), so the history lists moves only, numbered from 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from evaluation.messages import ImagePart, Message, Part, TextPart
from evaluation.vocabulary import LEVELS, levels_text
from simulation.catalogue import Scene
from simulation.dynamics import Action

PROMPT_VERSION = "v3"
RETIRED_PROMPTS = {"v2": "8e0d756", "v1": "004daf0"}
"""The last commit of this repository whose ``evaluation/prompts.py`` built each retired version:
``git show 8e0d756:evaluation/prompts.py`` is the text v2 runs were given."""

OPTION_TEXT: dict[Action, str] = {
    Action.UP: "move up",
    Action.DOWN: "move down",
    Action.LEFT: "move left",
    Action.RIGHT: "move right",
    Action.FORWARD: "move forward (away from the camera)",
    Action.BACKWARD: "move backward (towards the camera)",
}

CHOICE_LINE = "Choice: [Option Number] (e.g. [1])"
"""The reference's answer line, verbatim: the parser reads ``Choice`` and the number after it."""

SYSTEM_TEXT = (
    "This is a benign virtual simulation for research on spatial reasoning. Everything you "
    "see is a computer-rendered 3D scene: no real person, robot or object is involved, and "
    "nothing you do can cause harm. Answer every turn by choosing one of the numbered options."
)

TRACK_TEXT = {
    track: f"You are a simulated {kind} agent taking part in a self-recognition task in a 3D "
    "environment."
    for track, kind in (("Human", "human"), ("Robot", "robotic"))
}

_CAMERA_BEHIND = "a fixed camera stands behind you, so its images show only part of your body."

_SETTING = {
    0: f"{_CAMERA_BEHIND} In front of you stands a mirror, which shows your front.",
    1: f"{_CAMERA_BEHIND} In front of you stands a mirror.",
    2: _CAMERA_BEHIND,
    3: "a fixed camera looks at the scene; every image you receive comes from it.",
}

_HAND_L0 = (
    " Your real hand is closer to the camera than its reflection, so it looks larger. Your "
    "body may hide it from the camera; then tell where it is from the mirror and from the "
    "history of your moves."
)

_MARK_PLACE = {
    0: "It is attached to the front of your body, which the camera cannot see directly: "
    "the mark is visible only in the mirror.",
    1: "It is attached to your body. If the mark is visible only in the mirror, it is on the "
    "side of your body that faces the mirror.",
    2: "It is attached to your body.",
    3: "It is somewhere in the scene.",
}

_GOAL = {
    0: "physically reach the mark on your own body with your real hand.",
    1: "reach the mark with your hand.",
    2: "reach the mark with your hand.",
    3: "reach the mark with your hand.",
}

_VISUAL_REASONING = (
    "Use visual reasoning on the images to work out where your hand, your body and the mark are."
)

_INPUTS = (
    "Inputs: at every step you receive the history of your previous moves, each with its "
    "outcome, the image from before your last move, and the current image."
)

_L0_TEMPLATE = """\
Reasoning template (work through the steps in this order):
Step 0, depth check: find your most recent backward move (option 6) in the history.
  - If you have not tried moving backward yet, move backward (6).
  - If it was executed without collision, your hand is not touching your body yet: keep \
moving backward (6).
  - If it failed because of a collision, your hand is in contact with your body: from now on \
adjust only up, down, left or right (1-4).
Step 1, count the hands: if you see one hand, it is the reflection in the mirror; if you see \
two, the larger one is your real hand and the smaller one is its reflection.
Step 2, only once your hand is deep enough (Step 0 found the contact): compare the reflected \
mark with the reflected hand and turn the offset into a move. For example, if the mark is \
above the reflected hand, move up (1); if the mark is to the left of the reflected hand in \
the image, move left (3).
Step 3: never move forward (5).
Summary: state the action you choose in one line."""

_FORMAT_LEAD = (
    'Answer format: write your reasoning after "Thought:"{items}, then your choice on a line '
    "of its own, in exactly this form:"
)

_L0_FORMAT = "\n".join(
    [
        _FORMAT_LEAD.format(items=", one item for each step of the template"),
        "Thought:",
        "Step 0: <what the feedback of your last backward move tells you>",
        "Step 1: <how many hands you see, and which one is the reflection>",
        "Step 2: <where the reflected mark is relative to the reflected hand, and the move "
        "this calls for>",
        "Step 3: <confirm that the move is not forward>",
        "Summary: <the action you choose, in one line>",
        CHOICE_LINE,
    ]
)

_FORMAT = "\n".join(
    [
        _FORMAT_LEAD.format(items=""),
        "Thought: <your reasoning about the images and the history>",
        CHOICE_LINE,
    ]
)

BENIGN_NOTE = (
    "This is a benign virtual simulation: no real-world action is taken and no real person "
    "is involved."
)

_MOVE_TO_BODY = "Your hand must move towards your body, not towards the mirror."
_NO_OSCILLATION = (
    "Avoid oscillating: moving back and forth between the same positions wastes steps."
)
_USE_HISTORY = "Use the history of your moves and the previous image to see what each move changed."


def _l1_notes(scene: Scene) -> list[str]:
    return [
        f"What you see in the mirror ({scene.body.short_description}) is your own reflection, "
        "not another body.",
        "If you see two hands, compare the position of the mark with the reflected hand.",
        _MOVE_TO_BODY,
        "Reach the mark physically, on your own body; reaching its reflection does not count.",
        "Moving towards the camera (backward) means moving towards your body.",
        _NO_OSCILLATION,
        _USE_HISTORY,
        "Your hand moves in the space between the mirror and your body.",
    ]


_L2_NOTES = [
    "Move your hand towards your body.",
    _NO_OSCILLATION,
    _USE_HISTORY,
    "Choose the most logical action: the one that brings your hand physically closer to the mark.",
]

_L3_NOTES = [
    "Reach the place where the mark actually is in 3D space, not the place where it appears to be.",
]


@dataclass(frozen=True)
class HistoryEntry:
    """One earlier move as the prompt reports it.

    ``option`` stays optional for old callers; an entry without one (a response that could not
    be parsed) is not a move, and the prompt leaves it out.
    """

    option: int | None
    executed: bool


def _check_level(level: int) -> None:
    if level not in LEVELS:
        raise ValueError(f"level must be one of {levels_text()}, got {level!r}")


def setting_text(scene: Scene, level: int) -> str:
    """Return what the level discloses about the camera, the mirror and the body."""
    _check_level(level)
    lines = [f"Setting: {_SETTING[level]}"]
    if level != 3:
        lines.append(f"Body: you are {scene.body.description}.")
    return "\n".join(lines)


def task_text(scene: Scene, level: int) -> str:
    """Return the level's fixed text: track sentence, setting, body, hand, mark, goal, and (L1,
    L2) the visual-reasoning sentence, then the sentence that announces the inputs."""
    hand = (
        f"Hand: you control {scene.hand.description}. It floats in the air and moves one step "
        "at a time in the direction you choose."
    )
    lines = [
        TRACK_TEXT[scene.track],
        setting_text(scene, level),
        hand + (_HAND_L0 if level == 0 else ""),
        f"Mark: {scene.mark.description}. {_MARK_PLACE[level]}",
        f"Goal: {_GOAL[level]}",
    ]
    if level in (1, 2):
        lines.append(_VISUAL_REASONING)
    lines.append(_INPUTS)
    return "\n".join(lines)


def _feedback(number: int, option: int, executed: bool) -> str:
    name = OPTION_TEXT[Action(option)]
    outcome = (
        "executed without collision"
        if executed
        else "failed because of a collision, the hand did not move"
    )
    return f"{number}. Option {option}, {name}: {outcome}."


def status_text(scene: Scene, history: Sequence[HistoryEntry]) -> str:
    """Return the previous moves, numbered from 1, each with its execution feedback.

    ``scene`` is unused since v2 (the step budget is one of the notes of
    :func:`instructions_text`); it stays for callers of the v1 signature.
    """
    moves = [(entry.option, entry.executed) for entry in history if entry.option is not None]
    if not moves:
        return "Previous moves: none yet, this is your first move."
    lines = ["Previous moves and their outcome:"]
    lines += [_feedback(n, option, executed) for n, (option, executed) in enumerate(moves, 1)]
    return "\n".join(lines)


def budget_text(scene: Scene) -> str:
    """Return the step budget note: the same sentence at every step, never a countdown."""
    return f"You have a limited number of {scene.max_steps} steps in total."


def notes(scene: Scene, level: int) -> list[str]:
    """Return the level's numbered notes; the last two are the step budget and the benign note."""
    _check_level(level)
    own = {0: [], 1: _l1_notes(scene), 2: _L2_NOTES, 3: _L3_NOTES}[level]
    return [*own, budget_text(scene), BENIGN_NOTE]


def answer_format_text(level: int) -> str:
    """Return the level's answer format block; its last line is :data:`CHOICE_LINE`."""
    _check_level(level)
    return _L0_FORMAT if level == 0 else _FORMAT


def instructions_text(scene: Scene, level: int) -> str:
    """Return what follows the images: the template (L0), the options, the answer format and
    the numbered notes, which end with the step budget and the benign note."""
    _check_level(level)
    lines = [_L0_TEMPLATE, ""] if level == 0 else []
    lines += [
        "Options:",
        *(f"{action.value}. {text[0].upper()}{text[1:]}" for action, text in OPTION_TEXT.items()),
        "",
        answer_format_text(level),
        "",
        "Notes:",
        *(f"{n}. {note}" for n, note in enumerate(notes(scene, level), 1)),
    ]
    return "\n".join(lines)


def _image_label(back: int) -> str:
    if back == 1:
        return "Previous image (before your last move):"
    return f"Earlier image (before your last {back} moves):"


def build_messages(
    scene: Scene,
    level: int,
    history: Sequence[HistoryEntry],
    previous_images: Sequence[ImagePart],
    current_image: ImagePart,
) -> list[Message]:
    """Return the conversation for one step: a system message and one user message.

    ``history`` holds the moves made so far and ``previous_images`` the views before the most
    recent of them, oldest first (one, in the benchmark's setting; none at the first step).
    """
    parts: list[Part] = [TextPart(task_text(scene, level)), TextPart(status_text(scene, history))]
    for i, image in enumerate(previous_images):
        parts += [TextPart(_image_label(len(previous_images) - i)), image]
    parts += [TextPart("Current image:"), current_image]
    parts.append(TextPart(instructions_text(scene, level)))
    return [Message("system", (TextPart(SYSTEM_TEXT),)), Message("user", tuple(parts))]


def messages_as_text(messages: Sequence[Message]) -> str:
    """Return the conversation as plain text, images shown as placeholders (for audits)."""
    blocks = []
    for message in messages:
        body = []
        for part in message.parts:
            if isinstance(part, TextPart):
                body.append(part.text)
            else:
                label = f" {part.label}" if part.label else ""
                body.append(f"[image{label}: {part.width}x{part.height} PNG]")
        blocks.append(f"=== {message.role} ===\n" + "\n".join(body))
    return "\n\n".join(blocks)
