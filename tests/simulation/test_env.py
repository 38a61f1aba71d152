"""The Gymnasium interface."""

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import simulation  # noqa: F401  (registers MirrorBench-v2)
from simulation.catalogue import get_scene

SCENE = "female_0-mano_purple-leaf_1"


@pytest.fixture
def env():
    environment = gymnasium.make("MirrorBench-v2", scene=SCENE, size=48)
    yield environment
    environment.close()


def test_the_environment_passes_gymnasiums_checker():
    environment = gymnasium.make("MirrorBench-v2", scene=SCENE, size=48)
    check_env(environment.unwrapped, skip_render_check=True)
    environment.close()


def test_observations_are_images_and_actions_are_six_options(env):
    observation, info = env.reset(seed=3)
    assert env.action_space == gymnasium.spaces.Discrete(6)
    assert observation.shape == (48, 48, 3) and observation.dtype == np.uint8
    assert info["distance_steps"] == get_scene(SCENE).d0_steps
    assert info["hand_cell"] == (0, 0, 0)


def test_action_a_is_option_a_plus_one(env):
    env.reset()
    _, _, _, _, info = env.step(4)  # option 5: forward, +x
    assert info["hand_cell"] == (1, 0, 0) and info["executed"]
    _, _, _, _, info = env.step(2)  # option 3: left, +y
    assert info["hand_cell"] == (1, 1, 0)


def test_a_refused_move_is_reported_as_not_executed(env):
    env.reset()
    for _ in range(4):
        env.step(5)  # backward to the body's front
    _, _, _, _, info = env.step(5)
    assert not info["executed"] and info["hand_cell"] == (-4, 0, 0)


def test_success_terminates_the_episode(env):
    env.reset()
    # female_0: start (0.6, -0.5, 0.9), goal (0.2, 0.0, 1.0): 4 back, 5 left, 1 up.
    actions = [5] * 4 + [2] * 5
    for a in actions[:-1]:
        _, _, terminated, truncated, _ = env.step(a)
        assert not terminated and not truncated
    _, _, terminated, truncated, info = env.step(actions[-1])
    assert terminated and not truncated and info["success"] and info["distance_steps"] == 1


def test_the_step_budget_truncates_the_episode(env):
    env.reset()
    scene = get_scene(SCENE)
    for i in range(scene.max_steps):
        _, _, terminated, truncated, _ = env.step(0 if i % 2 == 0 else 1)
    assert truncated and not terminated


def test_bad_actions_and_unknown_scenes_are_refused(env):
    env.reset()
    with pytest.raises(ValueError, match="action"):
        env.step(6)
    with pytest.raises(KeyError, match="unknown scene"):
        gymnasium.make("MirrorBench-v2", scene="nobody-nohand-nomark")
