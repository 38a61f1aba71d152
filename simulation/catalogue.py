"""The MirrorBench asset catalogue and the scene set.

Plain data, no rendering: bodies, hands and marks with the positions and sizes of the
reference implementation (``protocol.md``), and the 66 scenes built from them. Geometry is
kept in whole millimetres so that every distance on the 0.1 m grid is an exact integer.
"""

from __future__ import annotations

from dataclasses import dataclass
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

    @property
    def track(self) -> Track:
        return self.body.track

    @property
    def max_steps(self) -> int:
        """The episode's step budget (``STEP_BUDGET`` of its body)."""
        return STEP_BUDGET[self.body.id]

    @property
    def mark_center_mm(self) -> Vec3:
        """Centre of the mark on the body's front surface."""
        return (self.body.front_x_mm, *self.body.mark_yz_mm)

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


@cache
def scene_set() -> dict[str, Scene]:
    """Return the scene set: 48 Human then 18 Robot scenes, keyed by stable id."""
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


def get_scene(scene_id: str) -> Scene:
    """Return the scene with this id, or raise UnknownSceneError naming valid ids."""
    scenes = scene_set()
    try:
        return scenes[scene_id]
    except KeyError:
        raise UnknownSceneError(
            f"unknown scene {scene_id!r}; valid ids look like 'male_0-mano_white-splash' "
            f"(bodies: {', '.join(BODIES)}; hands: {', '.join(HANDS)}; marks: {', '.join(MARKS)};"
            " `mirrorbench scenes` lists all 66)"
        ) from None


def select_scenes(selector: str) -> list[Scene]:
    """Return scenes for ``all``, ``human``, ``robot`` or a comma-separated list of ids."""
    scenes = scene_set()
    key = selector.strip().lower()
    if key == "all":
        return list(scenes.values())
    if key in ("human", "robot"):
        return [s for s in scenes.values() if s.track.lower() == key]
    return [get_scene(part.strip()) for part in selector.split(",") if part.strip()]
