"""What a model reads at any step of an episode: play given options, then build the next prompt.

``mirrorbench prompt --scene S --level L --moves 6,6,3`` prints :func:`prompt_after` as text, so
anyone can read the exact message of a step without running a model: the history with each
move's feedback, and the two images it would be shown, named by the hand's cell and frame key.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from evaluation.messages import ImagePart, Message
from evaluation.prompts import HistoryEntry, build_messages
from simulation.backends import renderer_version
from simulation.catalogue import Scene
from simulation.dynamics import Action, EpisodeState, Vec3
from simulation.renderer import frame_key


class EpisodeOver(ValueError):
    """The moves end the episode before the step asked for: there is no next prompt."""


@dataclass(frozen=True)
class PromptPreview:
    """The conversation of the step after ``moves``, and where the hand is."""

    step: int
    """0-based index of the step the messages are for (the number of moves played)."""
    cell: Vec3
    previous_cell: Vec3 | None
    messages: list[Message]


def _image(label: str, scene: Scene, cell: Vec3, size: int) -> ImagePart:
    key = frame_key(renderer_version(), scene.id, cell, size, condition=scene.condition)
    return ImagePart(b"", size, size, f"{label}, hand at cell {cell}, frame {key}")


_OPTIONS = frozenset(str(action.value) for action in Action)


def parse_moves(text: str) -> list[int]:
    """Return the options of ``"6,6,3"`` (empty text: none); raise ValueError naming a bad one."""
    items = [part.strip() for part in text.split(",")] if text.strip() else []
    for item in items:
        if item not in _OPTIONS:
            raise ValueError(f"--moves: each move must be an option 1-6, got {item!r}")
    return [int(item) for item in items]


def _how_it_ended(state: EpisodeState) -> str:
    return "reaches the mark" if state.success else "uses up the step budget"


def prompt_after(scene: Scene, level: int, moves: Sequence[int], size: int) -> PromptPreview:
    """Play ``moves`` in ``scene`` and return the messages of the next step.

    The history reports each move with its execution feedback (a move into the body or the
    mirror fails and leaves the hand where it was); the previous image is the view before the
    last move, as the runner shows it. The text is the same under every condition; the frame
    keys name ``scene``'s. Raises :class:`EpisodeOver` when the moves reach the
    mark or use up the step budget before the end.
    """
    state = EpisodeState(scene)
    history: list[HistoryEntry] = []
    previous: Vec3 | None = None
    for number, option in enumerate(moves, 1):
        if state.done:
            raise EpisodeOver(
                f"--moves: the episode ends after move {number - 1} (it {_how_it_ended(state)}); "
                f"give at most {number - 1} moves"
            )
        previous = state.cell
        transition = state.step(Action(option))
        history.append(HistoryEntry(option, transition.executed))
    if state.done:
        raise EpisodeOver(
            f"--moves: the episode ends with move {len(moves)} (it {_how_it_ended(state)}), so "
            f"no model is asked again; give at most {len(moves) - 1} moves"
        )
    images = [] if previous is None else [_image("previous view", scene, previous, size)]
    current = _image("current view", scene, state.cell, size)
    messages = build_messages(scene, level, history, images, current)
    return PromptPreview(len(moves), state.cell, previous, messages)
