"""Agents that play MirrorBench episodes.

Baselines never look at images, so the runner never renders for them:

- ``random``: a seeded uniform choice among the six options.
- ``oracle``: a shortest path that respects collisions (the upper bound: 1.0 on every metric).
- ``mirror-confused``: heads for the mark's mirror image instead of the mark, the failure mode
  of the paper's Fig. 4 (a sanity baseline that should do worse than random).
- ``chest``: heads for the place where the paper's protocol puts the mark, whatever the scene
  shows (the "go to the chest" habit that the ``moved-mark`` control condition defeats).
- ``scripted``: plays responses from a file (for tests and replays).

``ModelAgent`` asks a multimodal model through a ``ModelClient``.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from evaluation.bundle import RESPONSE_MAX_CHARS
from evaluation.cache import StepCache, StepKey
from evaluation.messages import ImagePart, ModelClient, ModelReply, TransportError
from evaluation.parsing import parse_choice
from evaluation.prompts import HistoryEntry, build_messages
from simulation.catalogue import MIRROR_FACE_X_MM, STEP_MM, Scene, get_scene
from simulation.dynamics import Action, EpisodeState, Vec3, goal_cell, is_collision_free


@dataclass(frozen=True)
class Observation:
    """What an agent may use to choose its next move."""

    scene: Scene
    level: int
    step: int
    """0-based index of the step about to be taken."""
    cell: Vec3
    history: tuple[HistoryEntry, ...]
    images: tuple[ImagePart, ...] = ()
    """Previous image(s) then the current one; empty for agents that do not look."""


@dataclass
class Decision:
    """An agent's answer for one step."""

    response: str
    option: int | None
    parse_error: str | None = None
    reply: ModelReply | None = None


class Agent(Protocol):
    """Chooses moves. ``needs_images`` tells the runner whether to render frames."""

    needs_images: bool
    image_history: int

    def start(self, scene: Scene, level: int, seed: int) -> None:
        """Prepare for a new episode."""

    def act(self, observation: Observation) -> Decision:
        """Return the decision for this step."""
        ...

    def resume(self, steps_taken: int) -> None:
        """Catch up with ``steps_taken`` steps played earlier (a resumed episode)."""

    def describe(self) -> dict[str, Any]:
        """Return the agent's metadata for the results bundle."""
        ...


AgentFactory = Callable[[], Agent]
"""Makes one agent per episode (agents keep per-episode state)."""


def _decision(option: int) -> Decision:
    return Decision(response=f"Choice: [{option}]", option=option)


@dataclass
class RandomAgent:
    """Uniform over the six options, seeded per episode from (seed, scene, level)."""

    seed: int = 0
    needs_images: bool = False
    image_history: int = 0
    _rng: random.Random = field(default_factory=random.Random, repr=False)

    @classmethod
    def factory(cls, argument: str = "", *, seed: int = 0) -> AgentFactory:
        """Return a factory of agents drawing from the run's ``seed`` (the registry's entry)."""
        return lambda: cls(seed)

    def start(self, scene: Scene, level: int, seed: int) -> None:
        self._rng = random.Random(f"{self.seed}|{seed}|{scene.id}|{level}")

    def act(self, observation: Observation) -> Decision:
        return _decision(self._rng.randint(1, len(Action)))

    def resume(self, steps_taken: int) -> None:
        # Draw what the earlier steps drew, so a resumed episode plays as an uninterrupted one.
        for _ in range(steps_taken):
            self._rng.randint(1, len(Action))

    def describe(self) -> dict[str, Any]:
        return {"name": "random", "kind": "baseline", "seed": self.seed}


def _towards(cell: Vec3, target: Vec3, scene: Scene) -> Action | None:
    """Return a move that brings ``cell`` one step closer to ``target`` (x first), or None."""
    axes = (
        (0, Action.FORWARD, Action.BACKWARD),
        (1, Action.LEFT, Action.RIGHT),
        (2, Action.UP, Action.DOWN),
    )
    for axis, positive, negative in axes:
        if cell[axis] == target[axis]:
            continue
        action = positive if target[axis] > cell[axis] else negative
        d = action.delta
        if is_collision_free(scene, (cell[0] + d[0], cell[1] + d[1], cell[2] + d[2])):
            return action
    return None


@dataclass
class _BlindBaseline:
    """What the scripted baselines that never look share: no images, no argument, no seed,
    nothing to set up or resume; each gives ``act`` and ``describe``."""

    needs_images: bool = False
    image_history: int = 0

    @classmethod
    def factory(cls, argument: str = "", *, seed: int = 0) -> AgentFactory:
        """Return a factory of agents (the registry's entry); it takes no argument or seed."""
        return cls

    def start(self, scene: Scene, level: int, seed: int) -> None:
        pass

    def resume(self, steps_taken: int) -> None:
        pass

    def act(self, observation: Observation) -> Decision:
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        raise NotImplementedError


@dataclass
class OracleAgent(_BlindBaseline):
    """Walks a shortest collision-free path to the goal: x first (towards the body), then y, z."""

    def act(self, observation: Observation) -> Decision:
        action = _towards(observation.cell, goal_cell(observation.scene), observation.scene)
        return _decision((action or Action.UP).value)

    def describe(self) -> dict[str, Any]:
        return {"name": "oracle", "kind": "baseline"}


def oracle_options(scene: Scene) -> list[int]:
    """Return the options the oracle answers in ``scene``: a shortest path to the mark."""

    state, goal, options = EpisodeState(scene), goal_cell(scene), []
    while not state.done:
        action = _towards(state.cell, goal, scene) or Action.UP
        options.append(action.value)
        state.step(action)
    return options


def mirror_image_cell(scene: Scene) -> Vec3:
    """Return the grid cell of the mark's mirror image (x reflected in the mirror's face)."""
    goal = goal_cell(scene)
    mirrored_x_mm = 2 * MIRROR_FACE_X_MM - scene.goal_mm[0]
    return (round((mirrored_x_mm - scene.start_mm[0]) / STEP_MM), goal[1], goal[2])


@dataclass
class MirrorConfusedAgent(_BlindBaseline):
    """Takes the reflection for the real thing: heads for the mark's mirror image.

    It moves forward towards the mirror first, then lines up with the mark's height and side,
    and keeps pressing forward once it touches the glass.
    """

    def act(self, observation: Observation) -> Decision:
        scene = observation.scene
        action = _towards(observation.cell, mirror_image_cell(scene), scene)
        return _decision((action or Action.FORWARD).value)

    def describe(self) -> dict[str, Any]:
        return {"name": "mirror-confused", "kind": "baseline"}


@dataclass
class ChestAgent(_BlindBaseline):
    """Goes where the mark is in the paper's protocol, never where the scene puts it.

    It walks the oracle's shortest path to the goal of the scene's ``main`` version (x first,
    towards the body, then y, then z) and then keeps pressing against the body. Under ``main``,
    ``no-mirror`` and ``mark-unseen`` that is the goal, so it scores as the oracle does: what
    prior knowledge of the usual place achieves without the mirror. Under ``moved-mark`` it
    never comes within a step of the mark (``simulation.catalogue.moved_mark_places``).
    """

    def act(self, observation: Observation) -> Decision:
        scene = observation.scene
        action = _towards(observation.cell, goal_cell(get_scene(scene.id)), scene)
        return _decision((action or Action.BACKWARD).value)

    def describe(self) -> dict[str, Any]:
        return {"name": "chest", "kind": "baseline"}


class ScriptError(ValueError):
    """A script file that cannot be read."""


def load_script(path: Path) -> list[str]:
    """Return the responses of a script: a JSON list (strings or numbers) or one per line."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise ScriptError(f"cannot read script {path}: {exc.strerror}") from None
    stripped = text.strip()
    if stripped.startswith("["):
        try:
            items = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise ScriptError(
                f"script {path} is not valid JSON: {exc.msg} (line {exc.lineno})"
            ) from None
        if not all(isinstance(item, str | int) for item in items):
            raise ScriptError(f"script {path}: every item must be a string or a number")
        return [str(item) for item in items]
    return [line for line in text.splitlines() if line.strip()]


@dataclass
class ScriptedAgent:
    """Plays the script's responses in order, the same for every episode; repeats the last one."""

    responses: Sequence[str]
    source: str = ""
    needs_images: bool = False
    image_history: int = 0

    def __post_init__(self) -> None:
        if not self.responses:
            raise ScriptError("a script needs at least one response")

    @classmethod
    def factory(cls, argument: str = "", *, seed: int = 0) -> AgentFactory:
        """Return a factory of agents playing the script file ``argument``, read once now (the
        registry's entry); ScriptError if it cannot be read."""
        responses = load_script(Path(argument))
        source = Path(argument).name
        return lambda: cls(responses, source=source)

    def start(self, scene: Scene, level: int, seed: int) -> None:
        pass

    def resume(self, steps_taken: int) -> None:
        pass

    def act(self, observation: Observation) -> Decision:
        response = self.responses[min(observation.step, len(self.responses) - 1)]
        parsed = parse_choice(response)
        return Decision(response, parsed.option, parsed.error)

    def describe(self) -> dict[str, Any]:
        return {"name": "scripted", "kind": "baseline", "source": self.source}


def reply_decision(reply: ModelReply) -> Decision:
    """Return the decision a model's reply makes: the option its answer parses as, or none
    (a bad response) when it cannot be read or the provider gave no answer.

    Raises:
        TransportError: The response is longer than a results bundle holds
            (``RESPONSE_MAX_CHARS``): the episode ends in error, as it would were it not
            stored in full (``verify`` parses every response again).
    """
    if len(reply.text) > RESPONSE_MAX_CHARS:
        raise TransportError(
            f"[unusable_response] the response has {len(reply.text)} characters, more than "
            f"the {RESPONSE_MAX_CHARS} a results bundle holds",
            attempts=reply.attempts,
        )
    if reply.refusal:
        return Decision(reply.text, None, f"no answer: {reply.refusal}", reply)
    parsed = parse_choice(reply.text)
    return Decision(reply.text, parsed.option, parsed.error, reply)


@dataclass
class ModelAgent:
    """Asks a multimodal model, showing it the prompt of the level and the rendered views.

    With a ``cache``, each step first looks for the answer stored for that very step of that
    episode (its scene, level and step index, with the same messages: see
    ``evaluation.cache``), so a re-run or a resumed episode replays its steps without asking,
    while every new step, even one whose prompt repeats the last (after a bad answer), is a
    real request. The agent holds the cache rather than a client wrapping one: the step is
    known here, from the observation, and the ``ModelClient`` protocol has no room for it.
    """

    client: ModelClient
    image_history: int = 1
    needs_images: bool = True
    cache: StepCache | None = None
    """Answers stored for the steps of earlier runs; ``None`` asks the model at every step."""

    def start(self, scene: Scene, level: int, seed: int) -> None:
        pass

    def resume(self, steps_taken: int) -> None:
        pass

    def act(self, observation: Observation) -> Decision:
        *previous, current = observation.images
        messages = build_messages(
            observation.scene, observation.level, observation.history, previous, current
        )
        if self.cache is None:
            reply = self.client.complete(messages)
        else:
            step = StepKey(observation.scene.id, observation.level, observation.step)
            reply = self.cache.complete(self.client, messages, step)
        return reply_decision(reply)

    def describe(self) -> dict[str, Any]:
        return {
            "name": f"{self.client.provider}:{self.client.model}",
            "kind": "model",
            "provider": self.client.provider,
            "model": self.client.model,
            "image_history": self.image_history,
        }
