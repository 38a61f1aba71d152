"""The four prompt levels (``PROMPT_VERSION = "v1"``).

Each level discloses exactly what ``protocol.md`` lists and no more:

- L0: the body, the camera behind it, the mirror and where the mark is, plus a step-by-step
  reasoning template and its answer format.
- L1: the same disclosure without the template, with hints.
- L2: the body and that the mark is attached to it; no mirror, no reflections.
- L3: only the hand, a fixed camera and the mark; neither the mirror nor the body.

Every level has the system message, the track sentence, the hand's description, the numbered
options, the step budget, the full action history with its execution feedback, the previous
image(s) and the current image, and an answer ending in ``Choice: [n]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from evaluation.messages import ImagePart, Message, Part, TextPart
from simulation.catalogue import Scene
from simulation.dynamics import Action

PROMPT_VERSION = "v1"
LEVELS = (0, 1, 2, 3)

OPTION_TEXT: dict[Action, str] = {
    Action.UP: "move up",
    Action.DOWN: "move down",
    Action.LEFT: "move left",
    Action.RIGHT: "move right",
    Action.FORWARD: "move forward (away from the camera)",
    Action.BACKWARD: "move backward (towards the camera)",
}

SYSTEM_TEXT = (
    "This is a benign virtual simulation for research on spatial reasoning. Everything you "
    "see is a computer-rendered 3D scene: no real person, robot or object is involved, and "
    "nothing you do can cause harm. Answer every turn by choosing one of the numbered options."
)

TRACK_TEXT = {
    track: f"You are a simulated {kind} agent performing a self-recognition task in a 3D "
    "environment."
    for track, kind in (("Human", "human"), ("Robot", "robotic"))
}

_L0_L1_SETTING = (
    "You are {body}. A camera stands behind you, so its images show only part of you, mostly "
    "your back. In front of you there is a mirror, and it shows your front. A mark is attached "
    "to the front of your body; you can see it only in the mirror. The mark is {mark}. Your "
    "goal is to physically touch the mark on your own body with your real hand."
)

_L0_TEMPLATE = """Reason step by step with this template before you answer:
Step 0, depth check: look at the feedback of your most recent "move backward".
  - If you have not moved backward yet, move backward.
  - If it was executed, keep moving backward.
  - If it failed because of a collision, your hand is touching your body: from now on adjust
    only up, down, left or right.
Step 1, count the hands: if you see one hand, it is the reflection in the mirror; if you see
  two, the larger one is your real hand and the smaller one is its reflection.
Step 2, compare the reflected mark with the reflected hand and decide whether the hand must go
  up, down, left or right to meet the mark.
Step 3, never move forward.

Answer in this format:
Depth check: <what the feedback of your last backward move tells you>
Hands: <how many hands you see and which one is your real hand>
Comparison: <where the reflected mark is relative to the reflected hand>
Choice: [n]"""

_L1_HINTS = [
    "The figure in the mirror is your own reflection, not another body.",
    "If you see two hands, compare the position of the mark with the reflected hand.",
    "Reach towards your own body, not towards the mirror.",
    "Moving towards the camera means moving towards your body.",
    "Avoid moving back and forth between the same positions.",
    "Your hand moves in the space between the mirror and your body.",
]

_L2_SETTING = (
    "You are {body}. A fixed camera provides the images. A mark is attached to your body. "
    "The mark is {mark}. Your goal is to touch the mark with your hand."
)
_L2_HINTS = [
    "Move towards your body.",
    "Avoid moving back and forth between the same positions.",
    "Use the history of your actions and their feedback.",
]

_L3_SETTING = (
    "A fixed camera provides the images. Somewhere in the scene there is a mark. The mark is "
    "{mark}. Your goal is to touch the mark with your hand."
)
_L3_HINTS = ["Reach the place where the mark actually is in 3D space, not where it appears to be."]

_ANSWER_FORMAT = (
    "Think about the images and the history, then end your answer with one line of the form "
    "Choice: [n], where n is the number of the option you choose."
)


@dataclass(frozen=True)
class HistoryEntry:
    """One earlier step as the prompt reports it."""

    option: int | None
    executed: bool


def _feedback(entry: HistoryEntry) -> str:
    if entry.option is None:
        return "no valid option could be read from the answer, so the hand did not move"
    name = OPTION_TEXT[Action(entry.option)]
    if entry.executed:
        return f"option {entry.option} ({name}): executed without collision"
    return f"option {entry.option} ({name}): failed because of a collision; the hand did not move"


def setting_text(scene: Scene, level: int) -> str:
    """Return what the level discloses about the body, the camera, the mirror and the mark."""
    body, mark = scene.body.description, scene.mark.description
    if level in (0, 1):
        return _L0_L1_SETTING.format(body=body, mark=mark)
    if level == 2:
        return _L2_SETTING.format(body=body, mark=mark)
    if level == 3:
        return _L3_SETTING.format(mark=mark)
    raise ValueError(f"level must be one of 0, 1, 2, 3, got {level!r}")


def _hints(level: int) -> list[str]:
    return {0: [], 1: _L1_HINTS, 2: _L2_HINTS, 3: _L3_HINTS}[level]


def task_text(scene: Scene, level: int) -> str:
    """Return the fixed part of the user message: track, hand, setting, options, hints, format."""
    lines = [
        TRACK_TEXT[scene.track],
        f"You control {scene.hand.description}. It floats in the air and you move it one step "
        "at a time.",
        setting_text(scene, level),
        "",
        "Options:",
        *(f"{action.value}. {text[0].upper()}{text[1:]}" for action, text in OPTION_TEXT.items()),
    ]
    hints = _hints(level)
    if hints:
        lines += ["", "Hints:", *(f"- {hint}" for hint in hints)]
    lines += ["", _L0_TEMPLATE if level == 0 else _ANSWER_FORMAT]
    return "\n".join(lines)


def status_text(scene: Scene, history: Sequence[HistoryEntry]) -> str:
    """Return the step budget and the full action history with feedback."""
    used = len(history)
    lines = [f"Step {used + 1} of {scene.max_steps}: you have {scene.max_steps - used} moves left."]
    if history:
        lines.append("Your previous actions:")
        lines += [f"- Step {i}: {_feedback(entry)}" for i, entry in enumerate(history, 1)]
    else:
        lines.append("This is your first move.")
    return "\n".join(lines)


def build_messages(
    scene: Scene,
    level: int,
    history: Sequence[HistoryEntry],
    previous_images: Sequence[ImagePart],
    current_image: ImagePart,
) -> list[Message]:
    """Return the conversation for one step: a system message and one user message."""
    parts: list[Part] = [TextPart(task_text(scene, level)), TextPart(status_text(scene, history))]
    for i, image in enumerate(previous_images):
        back = len(previous_images) - i
        parts.append(TextPart(f"The view {back} step{'s' if back > 1 else ''} ago:"))
        parts.append(image)
    parts.append(TextPart("The current view:"))
    parts.append(current_image)
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
