"""The Gymnasium interface: ``gymnasium.make(simulation.ENV_ID, scene=..., size=...)``.

``simulation.ENV_ID`` is ``MirrorBench-<BENCHMARK_VERSION>`` (``MirrorBench-v3``).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from simulation.backends import make_renderer_from_env
from simulation.catalogue import MAIN, Scene, check_condition, get_scene
from simulation.dynamics import Action, EpisodeState
from simulation.renderer import DEFAULT_SIZE, Renderer, frame_key, validate_size


def _default_renderer() -> Renderer:
    # The backend MIRRORBENCH_RENDERER names (MuJoCo by default); never a silent fallback.

    return make_renderer_from_env()


class MirrorBenchEnv(gym.Env[np.ndarray, np.int64]):
    """One MirrorBench scene as a Gymnasium environment.

    Action ``a`` in ``Discrete(6)`` is option ``a + 1`` of the prompt (up, down, left, right,
    forward, backward). Observations are the camera's RGB image. An episode terminates on
    success and is truncated when the step budget (``scene.max_steps``) is used up. The
    dynamics are deterministic, so ``reset(seed=...)`` only seeds ``np_random``.

    ``reset(options={"scene": scene_id})`` switches the environment to another scene (same
    size, mirror, condition and renderer); the new scene stays until the next switch.
    ``env.spec`` still names the scene the environment was made with.

    ``condition`` plays the scene under a control condition
    (``simulation.catalogue.CONDITIONS``): ``main``, the paper's protocol, by default.
    """

    RESET_OPTIONS = ("scene",)
    """The keys ``reset(options=...)`` accepts."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 2}  # noqa: RUF012 (gymnasium API)

    def __init__(
        self,
        scene: str = "male_0-mano_white-splash",
        size: int = DEFAULT_SIZE,
        render_mode: str | None = None,
        renderer: Renderer | None = None,
        mirror: bool = True,
        condition: str = MAIN,
    ) -> None:
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        self.condition = check_condition(condition)
        self.scene: Scene = get_scene(scene, condition)
        self.size = validate_size(size)
        self.render_mode = render_mode
        self.mirror = mirror
        self.action_space = spaces.Discrete(len(Action))
        self.observation_space = spaces.Box(0, 255, shape=(size, size, 3), dtype=np.uint8)
        self._renderer = renderer
        self._loaded = False
        self._state = EpisodeState(self.scene)
        self._frame: np.ndarray | None = None

    def _observe(self) -> np.ndarray:
        if self._renderer is None:
            self._renderer = _default_renderer()
        if not self._loaded:
            self._renderer.load(self.scene, mirror=self.mirror)
            self._loaded = True
        self._renderer.set_hand(self._state.cell)
        self._frame = self._renderer.render(self.size)
        return self._frame

    def _info(self, executed: bool) -> dict[str, Any]:
        version = self._renderer.version if self._renderer is not None else ""
        return {
            "distance_steps": self._state.distances[-1],
            "executed": executed,
            "success": self._state.success,
            "hand_cell": self._state.cell,
            "steps_taken": self._state.steps_taken,
            "max_steps": self.scene.max_steps,
            "frame_key": frame_key(
                version,
                self.scene.id,
                self._state.cell,
                self.size,
                mirror=self.mirror,
                condition=self.condition,
            ),
        }

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        if options:
            self._apply_options(options)  # first: a refused option changes nothing
        super().reset(seed=seed)
        self._state = EpisodeState(self.scene)
        observation = self._observe()
        return observation, self._info(executed=False)

    def _apply_options(self, options: dict[str, Any]) -> None:
        unknown = sorted(str(key) for key in options if key not in self.RESET_OPTIONS)
        if unknown:
            raise ValueError(
                f"unknown reset option(s) {', '.join(unknown)}; "
                f"valid options: {', '.join(self.RESET_OPTIONS)}"
            )
        if "scene" in options:
            scene_id = options["scene"]
            if not isinstance(scene_id, str):
                raise ValueError(f"options['scene'] must be a scene id string, got {scene_id!r}")
            scene = get_scene(
                scene_id, self.condition
            )  # UnknownSceneError (a KeyError) names valid ids
            if scene.id != self.scene.id:
                self.scene = scene
                self._loaded = False
                self._frame = None

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if not self.action_space.contains(action):
            raise ValueError(f"action must be an integer in [0, 5], got {action!r}")
        before = self._state.distances[-1]
        transition = self._state.step(Action(int(action) + 1))
        observation = self._observe()
        reward = float(before - transition.distance_steps)
        terminated = self._state.success
        truncated = not terminated and self._state.done
        return observation, reward, terminated, truncated, self._info(transition.executed)

    def render(self) -> np.ndarray | None:
        if self.render_mode != "rgb_array":
            return None
        return self._frame if self._frame is not None else self._observe()

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None
            self._loaded = False
