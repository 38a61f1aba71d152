"""The MirrorBench asset catalogue and the scene set.

Plain data, no rendering: bodies, hands and marks with the positions and sizes of the
reference implementation (``protocol.md``), and the 66 scenes built from them. Geometry is
kept in whole millimetres so that every distance on the 0.1 m grid is an exact integer.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from functools import cache
from typing import Literal

Track = Literal["Human", "Robot"]
Vec3 = tuple[int, int, int]

SCENE_SET_VERSION = "v2"
STEP_MM = 100
"""Grid step: 0.1 m."""
HAND_DEPTH_MM = 100
"""Collision depth of every hand along x."""
MIRROR_FACE_X_MM = 1995
"""x of the mirror's reflecting face (the slab is 10 mm deep, centred at x = 2.0 m)."""
MIRROR_CENTER_MM: Vec3 = (2000, 0, 1000)
MIRROR_SIZE_MM = (10, 2000, 2000)
"""Depth (x), width (y) and height (z) of the mirror slab."""
STEP_BUDGET: dict[str, int] = {
    "male_0": 21,
    "male_1": 20,
    "female_0": 20,
    "female_1": 21,
    "tienkung": 15,
    "GR1_T2": 16,
    "nova_carter": 16,
}
"""Steps allowed per episode, by body: a fact of the benchmark, not a formula.

The reference computes ``int(d0 / 0.1) + 10`` on float32 poses, which truncates 11.999... to
11 for male_0, tienkung, GR1_T2 and nova_carter; the paper's numbers were produced with these
budgets (``docs/protocol.md`` shows the evidence). Benchmark v1 used ``d0_steps + 10``.
"""


@dataclass(frozen=True)
class Body:
    """A body that stands before the mirror, facing +x."""

    id: str
    track: Track
    description: str
    short_description: str
    offset_mm: Vec3
    """Where the reference places the body's root; x and y locate the body on the floor."""
    depth_mm: int
    hand_start_mm: Vec3
    mark_yz_mm: tuple[int, int]

    @property
    def front_x_mm(self) -> int:
        """x of the body's front surface, where the mark sits."""
        return self.offset_mm[0] + self.depth_mm // 2


@dataclass(frozen=True)
class Hand:
    """A floating hand (no arm) that the agent steers."""

    id: str
    track: Track
    description: str
    rgb: tuple[int, int, int] | None = None


@dataclass(frozen=True)
class Mark:
    """A flat square texture on the body's front, facing the mirror."""

    id: str
    track: Track
    description: str
    side_mm: int


BODIES: dict[str, Body] = {
    b.id: b
    for b in (
        Body(
            "male_0",
            "Human",
            "a man in construction work clothes: a red hard hat, an orange high-visibility "
            "safety vest with silver stripes over a long-sleeved blue work shirt, "
            "grey work trousers and brown work boots",
            "a man in a red hard hat and an orange safety vest",
            (0, 0, 0),
            300,
            (700, -500, 1500),
            (-100, 1200),
        ),
        Body(
            "male_1",
            "Human",
            "a man with short black hair wearing an open brown jacket over a grey shirt, "
            "dark blue trousers and black shoes",
            "a man in a brown jacket over a grey shirt",
            (0, 0, 0),
            300,
            (600, 300, 1500),
            (-100, 1300),
        ),
        Body(
            "female_0",
            "Human",
            "a woman dressed as a police officer: a dark navy peaked police cap with a gold "
            "badge, a short-sleeved blue police shirt with a gold badge, dark epaulettes and a "
            "dark tie, a black belt, dark navy trousers and black shoes; she has long brown hair",
            "a woman in a blue police shirt and dark trousers",
            (0, 0, 0),
            300,
            (600, -500, 900),
            (0, 1000),
        ),
        Body(
            "female_1",
            "Human",
            "a woman with long black hair wearing an open purple vest over a long-sleeved green "
            "shirt, dark grey trousers and black shoes",
            "a woman in a purple vest over a green shirt",
            (0, 0, 0),
            300,
            (600, 400, 1200),
            (-100, 1000),
        ),
        Body(
            "tienkung",
            "Robot",
            "a black humanoid robot with a boxy torso, a small round head on a slender neck, "
            "two arms and two legs, standing upright with its arms at its sides",
            "a black humanoid robot",
            (0, 0, 850),
            300,
            (500, -200, 1300),
            (0, 1200),
        ),
        Body(
            "GR1_T2",
            "Robot",
            "a black humanoid robot with a smooth rounded torso, a helmet-like head, two arms "
            "and two legs, standing upright with its arms at its sides",
            "a black humanoid robot",
            (0, 0, 950),
            300,
            (400, 200, 1550),
            (0, 1250),
        ),
        Body(
            "nova_carter",
            "Robot",
            "a white wheeled mobile robot base: a large, low, round white body with a dark "
            "sensor band across its front, without arms or a head",
            "a white wheeled robot",
            (0, 500, 0),
            1100,
            (800, 100, 900),
            (0, 500),
        ),
    )
}

HANDS: dict[str, Hand] = {
    h.id: h
    for h in (
        Hand(
            "mano_white",
            "Human",
            "a white human right hand with five fingers (no arm)",
            (253, 253, 253),
        ),
        Hand(
            "mano_brown",
            "Human",
            "a brown human right hand with five fingers (no arm)",
            (122, 77, 55),
        ),
        Hand(
            "mano_purple",
            "Human",
            "a purple human right hand with five fingers (no arm)",
            (64, 64, 128),
        ),
        Hand(
            "allegro",
            "Robot",
            (
                "a dark grey four-fingered robotic hand (three fingers and a thumb) with white "
                "fingertips"
            ),
        ),
        Hand(
            "shadow_hand", "Robot", "a dark, almost black, five-fingered robotic hand", (32, 32, 32)
        ),
        Hand(
            "Robotiq_2F_85",
            "Robot",
            (
                "a black two-finger robotic gripper with a round base and two hinged fingers with "
                "silver tips"
            ),
        ),
    )
}

MARKS: dict[str, Mark] = {
    m.id: m
    for m in (
        Mark(
            "splash",
            "Human",
            "a bold red paint-splash emblem (a blob with rounded spikes and droplets) on white",
            200,
        ),
        Mark(
            "leaf_0",
            "Human",
            "a dark green abstract leaf with three rounded lobes and a short stem on white",
            200,
        ),
        Mark(
            "leaf_1",
            "Human",
            "a stylised green leaf with pale veins on a light blue background",
            200,
        ),
        Mark(
            "bread",
            "Human",
            "a wavy light blue shape with a thick purple outline on a solid blue background",
            200,
        ),
        Mark(
            "logo_0",
            "Robot",
            "a glossy blue rounded diamond with a black oval cut-out in its centre, on white",
            100,
        ),
        Mark("logo_1", "Robot", "three interlocking smooth white rings on a black background", 100),
    )
}


@dataclass(frozen=True)
class Scene:
    """One scene: a body, a hand and a mark, with the start and goal of the hand."""

    id: str
    body: Body
    hand: Hand
    mark: Mark
    start_mm: Vec3
    goal_mm: Vec3
    d0_steps: int
    condition: str = "main"
    """The control condition the scene is played under (``CONDITIONS``); ``main`` is the
    paper's protocol."""

    @property
    def track(self) -> Track:
        return self.body.track

    @property
    def max_steps(self) -> int:
        """The episode's step budget (``STEP_BUDGET`` of its body)."""
        return STEP_BUDGET[self.body.id]

    @property
    def mark_center_mm(self) -> Vec3:
        """Centre of the mark on the body's front surface (the goal's y and z)."""
        return (self.body.front_x_mm, self.goal_mm[1], self.goal_mm[2])

    @property
    def variant_id(self) -> str:
        """The scene's id under its condition: the id itself under ``main``, else
        ``<id>@<condition>`` (what renderers keep a built scene under)."""
        return self.id if self.condition == MAIN else f"{self.id}@{self.condition}"

    @property
    def shows_mirror(self) -> bool:
        """Whether the scene's condition keeps the mirror."""
        return CONDITIONS[self.condition].mirror

    @property
    def shows_mark(self) -> bool:
        """Whether the scene's condition draws the mark (it is the goal either way)."""
        return CONDITIONS[self.condition].mark_drawn

    def summary(self) -> dict[str, object]:
        """Return the scene as a JSON-ready dict (the ``mirrorbench scenes --json`` record)."""
        return {
            "id": self.id,
            "track": self.track,
            "body": self.body.id,
            "hand": self.hand.id,
            "mark": self.mark.id,
            "d0_steps": self.d0_steps,
            "max_steps": self.max_steps,
            "start_m": [v / 1000 for v in self.start_mm],
            "goal_m": [v / 1000 for v in self.goal_mm],
            **({"condition": self.condition} if self.condition != MAIN else {}),
        }


class SceneValidationError(ValueError):
    """A scene whose goal is unreachable or in collision."""


def x_limits_steps(scene_front_x_mm: int, start_x_mm: int) -> tuple[int, int]:
    """Return the lowest and highest x grid offset (in steps from the start) the hand may occupy.

    A move is refused when the hand's back face would pass the body's front
    (``x - depth/2 < front``) or its front face would pass the mirror's face
    (``x + depth/2 > mirror``).
    """
    half = HAND_DEPTH_MM // 2
    lowest = -((start_x_mm - half - scene_front_x_mm) // STEP_MM)
    highest = (MIRROR_FACE_X_MM - half - start_x_mm) // STEP_MM
    return lowest, highest


def _build_scene(body: Body, hand: Hand, mark: Mark) -> Scene:
    scene_id = f"{body.id}-{hand.id}-{mark.id}"
    goal = (body.front_x_mm + HAND_DEPTH_MM // 2, *body.mark_yz_mm)
    delta = [g - s for g, s in zip(goal, body.hand_start_mm, strict=True)]
    if any(d % STEP_MM for d in delta):
        raise SceneValidationError(f"{scene_id}: goal {goal} is not a whole number of steps away")
    goal_offset_x = delta[0] // STEP_MM
    lowest, highest = x_limits_steps(body.front_x_mm, body.hand_start_mm[0])
    if not lowest <= goal_offset_x <= highest:
        raise SceneValidationError(f"{scene_id}: goal x {goal[0]} mm collides with body or mirror")
    if not lowest <= 0 <= highest:
        raise SceneValidationError(f"{scene_id}: start collides with body or mirror")
    d0 = sum(abs(d) for d in delta) // STEP_MM
    return Scene(scene_id, body, hand, mark, body.hand_start_mm, goal, d0)


HUMAN_MARKS = ("splash", "leaf_0", "leaf_1", "bread")
ROBOT_MARKS = ("logo_0", "logo_1")


def scene_set(condition: str = "main") -> dict[str, Scene]:
    """Return the scene set: 48 Human then 18 Robot scenes, keyed by stable id.

    ``condition`` names a control condition (``CONDITIONS``): the same scenes, each changed as
    the condition says; each condition's set is built once per process. Raises
    UnknownConditionError naming the conditions for any other name.
    """
    if condition == MAIN:
        return _paper_scene_set()
    return _control_scene_set(check_condition(condition))


@cache
def _control_scene_set(condition: str) -> dict[str, Scene]:
    return {i: scene_under(s, condition) for i, s in _paper_scene_set().items()}


@cache
def _paper_scene_set() -> dict[str, Scene]:
    scenes: dict[str, Scene] = {}
    for track, marks in (("Human", HUMAN_MARKS), ("Robot", ROBOT_MARKS)):
        bodies = [b for b in BODIES.values() if b.track == track]
        hands = [h for h in HANDS.values() if h.track == track]
        for body in bodies:
            for hand in hands:
                for mark_id in marks:
                    scene = _build_scene(body, hand, MARKS[mark_id])
                    scenes[scene.id] = scene
    return scenes


class UnknownSceneError(KeyError):
    """A scene id that is not in the scene set."""

    def __str__(self) -> str:
        return str(self.args[0])


def get_scene(scene_id: str, condition: str = "main") -> Scene:
    """Return the scene with this id under ``condition``, or raise UnknownSceneError naming
    valid ids (UnknownConditionError naming the conditions)."""
    scenes = scene_set(condition)
    try:
        return scenes[scene_id]
    except KeyError:
        raise UnknownSceneError(
            f"unknown scene {scene_id!r}; valid ids look like 'male_0-mano_white-splash' "
            f"(bodies: {', '.join(BODIES)}; hands: {', '.join(HANDS)}; marks: {', '.join(MARKS)};"
            " `mirrorbench scenes` lists all 66)"
        ) from None


def select_scenes(selector: str, condition: str = "main") -> list[Scene]:
    """Return scenes for ``all``, ``human``, ``robot`` or a comma-separated list of ids, under
    ``condition``."""
    scenes = scene_set(condition)
    key = selector.strip().lower()
    if key == "all":
        return list(scenes.values())
    if key in ("human", "robot"):
        return [s for s in scenes.values() if s.track.lower() == key]
    return [get_scene(part.strip(), condition) for part in selector.split(",") if part.strip()]


# Control conditions: the same scenes with one change each, beside the paper's protocol.

MAIN = "main"
NO_MIRROR = "no-mirror"
MARK_UNSEEN = "mark-unseen"
MOVED_MARK = "moved-mark"


@dataclass(frozen=True)
class Condition:
    """A way of playing the scene set: the paper's protocol (``main``) or a control.

    A control changes one thing and nothing else: the prompts, budgets, dynamics and metrics
    stay the paper's.
    """

    name: str
    summary: str
    mirror: bool = True
    """The mirror is in the scene."""
    mark_drawn: bool = True
    """The mark is drawn (it is the goal whether drawn or not)."""
    mark_moved: bool = False
    """The mark sits at the scene's moved place (``moved_mark_yz``), not at its body's."""


CONDITIONS: dict[str, Condition] = {
    c.name: c
    for c in (
        Condition(MAIN, "the paper's protocol"),
        Condition(NO_MIRROR, "the mirror is removed: the mark is visible nowhere", mirror=False),
        Condition(
            MARK_UNSEEN,
            "the mirror stays, the mark is not drawn (it is still the goal)",
            mark_drawn=False,
        ),
        Condition(
            MOVED_MARK,
            "the mark sits at another seeded place on the front of the body",
            mark_moved=True,
        ),
    )
}
"""Every condition by name, ``main`` first."""


class UnknownConditionError(ValueError):
    """A condition name that is not in ``CONDITIONS``."""


def check_condition(name: object) -> str:
    """Return ``name`` if it names a condition, or raise UnknownConditionError naming them."""
    if not isinstance(name, str) or name not in CONDITIONS:
        raise UnknownConditionError(
            f"unknown condition {name!r}; expected one of {', '.join(CONDITIONS)}"
        )
    return name


MOVED_MARK_SEED = 36
"""Seeds the choice of each scene's moved mark among its places (``moved_mark_yz``)."""
MOVED_MARK_MIN_SPARE_STEPS = 5
"""A moved mark leaves at least this many steps of the budget beyond its shortest path."""

_FEMALE_FRONT_PLACES_MM: tuple[tuple[int, int], ...] = (
    (-100, 700),
    (100, 700),
    (-100, 800),
    (100, 800),
    (-100, 900),
    (0, 900),
    (100, 900),
    (-100, 1000),
    (0, 1000),
    (100, 1000),
    (-100, 1100),
    (0, 1100),
    (100, 1100),
    (-100, 1200),
    (0, 1200),
    (100, 1200),
    (0, 1300),
)
"""The two female bodies share one front: the same candidate places for a moved mark."""

MOVED_MARK_PLACES_MM: dict[str, tuple[tuple[int, int], ...]] = {
    "male_0": (
        (-100, 1000),
        (0, 1000),
        (100, 1000),
        (-100, 1100),
        (0, 1100),
        (100, 1100),
        (-100, 1200),
        (0, 1200),
        (100, 1200),
        (0, 1300),
    ),
    "male_1": (
        (-100, 1000),
        (0, 1000),
        (100, 1000),
        (-100, 1100),
        (0, 1100),
        (100, 1100),
        (-100, 1200),
        (0, 1200),
        (100, 1200),
        (0, 1300),
    ),
    "female_0": _FEMALE_FRONT_PLACES_MM,
    "female_1": _FEMALE_FRONT_PLACES_MM,
    "tienkung": (
        (0, 900),
        (0, 1000),
        (0, 1100),
        (0, 1200),
    ),
    "GR1_T2": (
        (-200, 950),
        (0, 950),
        (200, 950),
        (-200, 1050),
        (0, 1050),
        (200, 1050),
        (-100, 1150),
        (0, 1250),
        (0, 1550),
    ),
    "nova_carter": (
        (-200, 200),
        (-100, 200),
        (0, 200),
        (100, 200),
        (200, 200),
        (-200, 300),
        (-100, 300),
        (0, 300),
        (100, 300),
        (200, 300),
        (-200, 400),
        (-100, 400),
        (0, 400),
        (100, 400),
        (200, 400),
        (-200, 500),
        (-100, 500),
        (0, 500),
        (100, 500),
        (200, 500),
        (-100, 600),
        (0, 600),
        (100, 600),
    ),
}
"""Where a mark fits on the front of each body (y, z of its centre, in millimetres, on the
0.1 m grid), within 0.3 m of the height of the body's own mark: the body's surface lies within
0.1 m behind the mark's centre and the corners of its middle half, nothing of the body stands
in front of it, the camera behind the body cannot see it, and the mirror shows it from the
start. ``tests/simulation/test_conditions.py`` checks every scene's moved mark against the
body's geometry and the visibility probe."""


def moved_mark_places(scene: Scene) -> list[tuple[int, int]]:
    """Return the places the moved mark of ``scene`` may take (y, z in millimetres).

    Of its body's ``MOVED_MARK_PLACES_MM``, those more than one step (Manhattan) from every
    cell of every shortest route from the start to the scene's own mark, so that heading for
    the usual place never touches the moved mark, and within the step budget with
    ``MOVED_MARK_MIN_SPARE_STEPS`` to spare.
    """
    main = scene_set()[scene.id]
    start, goal = main.start_mm, main.goal_mm
    places = []
    for y, z in MOVED_MARK_PLACES_MM[main.body.id]:
        outside = sum(
            _outside_steps(value, start[axis], goal[axis]) for axis, value in ((1, y), (2, z))
        )
        d0 = (abs(goal[0] - start[0]) + abs(y - start[1]) + abs(z - start[2])) // STEP_MM
        if outside >= 2 and d0 + MOVED_MARK_MIN_SPARE_STEPS <= main.max_steps:
            places.append((y, z))
    return places


def _outside_steps(value: int, a: int, b: int) -> int:
    """How many steps ``value`` lies outside the range between ``a`` and ``b``."""
    low, high = min(a, b), max(a, b)
    return max(low - value, value - high, 0) // STEP_MM


def moved_mark_yz(scene: Scene) -> tuple[int, int]:
    """Return where the mark of ``scene`` sits under ``moved-mark``: one of its
    ``moved_mark_places``, drawn with ``MOVED_MARK_SEED`` and the scene's id."""
    places = moved_mark_places(scene)
    if not places:
        raise SceneValidationError(f"{scene.id}: no place for a moved mark")
    return random.Random(f"{MOVED_MARK_SEED}|{scene.id}").choice(places)


def scene_under(scene: Scene, condition: str) -> Scene:
    """Return ``scene`` as ``condition`` plays it: the same scene, with its condition named and,
    for ``moved-mark``, the mark (and so the goal and d0) at its moved place."""
    rule = CONDITIONS[check_condition(condition)]
    main = scene_set()[scene.id]
    if condition == MAIN:
        return main
    if not rule.mark_moved:
        return replace(main, condition=condition)
    y, z = moved_mark_yz(main)
    goal = (main.goal_mm[0], y, z)
    d0 = sum(abs(g - s) for g, s in zip(goal, main.start_mm, strict=True)) // STEP_MM
    return replace(main, goal_mm=goal, d0_steps=d0, condition=condition)
