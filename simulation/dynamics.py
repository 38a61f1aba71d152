"""Grid dynamics of a MirrorBench episode: pure functions, no rendering.

The hand lives on a 0.1 m grid, addressed by its offset from the start in whole steps
(``hand_cell``). Collisions are checked along x only, against the body's front and the
mirror's face. Distances are Manhattan distances in whole steps.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

from simulation.catalogue import STEP_MM, Scene, Vec3, x_limits_steps

DYNAMICS_VERSION = "v1"
SUCCESS_THRESHOLD_STEPS = 1
"""d_th: an executed move that ends within 1 step (Manhattan) of the goal succeeds."""


class Action(IntEnum):
    """The six moves, numbered as the options shown to the model."""

    UP = 1
    DOWN = 2
    LEFT = 3
    RIGHT = 4
    FORWARD = 5
    BACKWARD = 6

    @property
    def delta(self) -> Vec3:
        """The move as a grid offset (x, y, z)."""
        return _DELTAS[self]


_DELTAS: dict[Action, Vec3] = {
    Action.UP: (0, 0, 1),
    Action.DOWN: (0, 0, -1),
    Action.LEFT: (0, 1, 0),
    Action.RIGHT: (0, -1, 0),
    Action.FORWARD: (1, 0, 0),
    Action.BACKWARD: (-1, 0, 0),
}

ORIGIN: Vec3 = (0, 0, 0)


def hand_position_mm(scene: Scene, cell: Vec3) -> Vec3:
    """Return the hand's centre in millimetres for a grid offset from the start."""
    return (
        scene.start_mm[0] + cell[0] * STEP_MM,
        scene.start_mm[1] + cell[1] * STEP_MM,
        scene.start_mm[2] + cell[2] * STEP_MM,
    )


def goal_cell(scene: Scene) -> Vec3:
    """Return the goal as a grid offset from the start."""
    return (
        (scene.goal_mm[0] - scene.start_mm[0]) // STEP_MM,
        (scene.goal_mm[1] - scene.start_mm[1]) // STEP_MM,
        (scene.goal_mm[2] - scene.start_mm[2]) // STEP_MM,
    )


def distance_steps(scene: Scene, cell: Vec3) -> int:
    """Return the Manhattan distance from the hand to the goal, in whole steps."""
    goal = goal_cell(scene)
    return abs(goal[0] - cell[0]) + abs(goal[1] - cell[1]) + abs(goal[2] - cell[2])


def is_collision_free(scene: Scene, cell: Vec3) -> bool:
    """Return whether the hand may occupy this cell (x-only check against body and mirror)."""
    lowest, highest = x_limits_steps(scene.body.front_x_mm, scene.start_mm[0])
    return lowest <= cell[0] <= highest


@dataclass(frozen=True)
class Transition:
    """The result of one step."""

    cell: Vec3
    executed: bool
    """The move was carried out (False for a refused move or a bad response)."""
    distance_steps: int
    success: bool


def apply_action(scene: Scene, cell: Vec3, action: Action | None) -> Transition:
    """Return where the hand ends after ``action`` (None stands for a bad response).

    A refused move or a bad response leaves the hand where it was. Success needs an
    executed move that ends within ``SUCCESS_THRESHOLD_STEPS`` of the goal.
    """
    if action is None:
        return Transition(cell, False, distance_steps(scene, cell), False)
    dx, dy, dz = action.delta
    target = (cell[0] + dx, cell[1] + dy, cell[2] + dz)
    if not is_collision_free(scene, target):
        return Transition(cell, False, distance_steps(scene, cell), False)
    d = distance_steps(scene, target)
    return Transition(target, True, d, d <= SUCCESS_THRESHOLD_STEPS)


@dataclass
class EpisodeState:
    """A running episode on the grid: where the hand is and the distance trajectory."""

    scene: Scene
    cell: Vec3 = ORIGIN
    distances: list[int] = field(default_factory=list)
    success: bool = False

    def __post_init__(self) -> None:
        if not self.distances:
            self.distances.append(distance_steps(self.scene, self.cell))

    @property
    def steps_taken(self) -> int:
        return len(self.distances) - 1

    @property
    def done(self) -> bool:
        """The episode has ended: success, or the step budget is used up."""
        return self.success or self.steps_taken >= self.scene.max_steps

    def step(self, action: Action | None) -> Transition:
        """Apply one action (None: a bad response) and record the distance."""
        if self.done:
            raise RuntimeError(f"episode on {self.scene.id} has already ended")
        transition = apply_action(self.scene, self.cell, action)
        self.cell = transition.cell
        self.distances.append(transition.distance_steps)
        self.success = transition.success
        return transition
