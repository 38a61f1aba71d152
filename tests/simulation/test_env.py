"""The Gymnasium interface."""

import subprocess
import sys
import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import simulation
from simulation import ENV_ID
from simulation.catalogue import UnknownSceneError, get_scene, scene_set
from simulation.versions import BENCHMARK_VERSION

gymnasium.register_envs(simulation)

SCENE = "female_0-mano_purple-leaf_1"
OTHER_SCENE = "GR1_T2-shadow_hand-logo_0"


@pytest.fixture
def env():
    environment = gymnasium.make(ENV_ID, scene=SCENE, size=48)
    yield environment
    environment.close()


def test_the_env_id_version_is_the_benchmark_version():
    assert f"MirrorBench-{BENCHMARK_VERSION}" == ENV_ID
    spec = gymnasium.spec(ENV_ID)
    assert spec.name == "MirrorBench"
    assert f"v{spec.version}" == BENCHMARK_VERSION


REGISTERED = (
    "from gymnasium.envs.registration import registry\n"
    "print(sorted(k for k in registry if k.startswith('MirrorBench')))\n"
)


@pytest.mark.parametrize(
    "imports",
    [
        "import gymnasium, simulation",  # the documented order
        "import simulation, gymnasium",  # Gymnasium loads after the package
        "import simulation.catalogue\nimport gymnasium.envs.registration",
        "import simulation\nimport importlib; importlib.reload(simulation); import gymnasium",
    ],
)
def test_importing_the_package_registers_the_env_whichever_loads_first(imports):
    code = f"{imports}\nimport sys\n" + REGISTERED
    code += "print(sum(type(f).__name__ == '_RegisterWhenGymnasiumLoads' for f in sys.meta_path))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:2] == [f"[{ENV_ID!r}]", "0"]  # once, and the hook is gone


def test_importing_the_package_loads_neither_gymnasium_nor_numpy():
    code = "import sys, simulation, simulation.catalogue\n"
    code += "print(sorted(m for m in ('gymnasium', 'numpy') if m in sys.modules))\n"
    code += "import gymnasium\n" + REGISTERED
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:2] == ["[]", f"[{ENV_ID!r}]"]


@pytest.mark.parametrize("render_mode", [None, "rgb_array"])
def test_the_environment_passes_gymnasiums_checker_without_warnings(render_mode):
    environment = gymnasium.make(ENV_ID, scene=SCENE, size=48, render_mode=render_mode)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            check_env(environment.unwrapped)
    finally:
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
        gymnasium.make(ENV_ID, scene="nobody-nohand-nomark")


def test_reset_options_switch_the_scene(env):
    observation, info = env.reset(options={"scene": OTHER_SCENE})
    other = get_scene(OTHER_SCENE)
    assert env.unwrapped.scene.id == OTHER_SCENE
    assert info["distance_steps"] == other.d0_steps and info["max_steps"] == other.max_steps
    assert observation.shape == (48, 48, 3)
    fresh = gymnasium.make(ENV_ID, scene=OTHER_SCENE, size=48)
    try:
        fresh_observation, fresh_info = fresh.reset()
    finally:
        fresh.close()
    assert np.array_equal(observation, fresh_observation) and info == fresh_info
    # The scene stays until the next switch; an empty options dict keeps it.
    env.step(0)
    env.reset()
    assert env.unwrapped.scene.id == OTHER_SCENE
    env.reset(options={})
    assert env.unwrapped.scene.id == OTHER_SCENE
    _, info = env.reset(options={"scene": SCENE})
    assert info["distance_steps"] == get_scene(SCENE).d0_steps


def test_reset_options_refuse_unknown_scenes_and_keys(env):
    env.reset()
    with pytest.raises(UnknownSceneError, match=r"unknown scene .*male_0-mano_white-splash"):
        env.reset(options={"scene": "nobody-nohand-nomark"})
    with pytest.raises(ValueError, match="scene id"):
        env.reset(options={"scene": 3})
    with pytest.raises(ValueError, match="valid options: scene"):
        env.reset(options={"scene_id": OTHER_SCENE})
    # A refused switch leaves the environment on its scene.
    assert env.unwrapped.scene.id == SCENE
    _, info = env.reset()
    assert info["distance_steps"] == get_scene(SCENE).d0_steps


def _rollout(environment, actions, seed, options=None):
    observation, info = environment.reset(seed=seed, options=options)
    trace = [(observation, info)]
    for action in actions:
        observation, reward, terminated, truncated, info = environment.step(action)
        trace.append((observation, (reward, terminated, truncated, info)))
        if terminated or truncated:
            break
    return trace


SCENES = list(scene_set())
ONE_PER_BODY = {get_scene(s).body.id: s for s in SCENES}
"""One scene of each body, played by a fresh environment too."""


def test_the_determinism_check_covers_all_66_scenes():
    assert len(SCENES) == 66


@pytest.fixture(scope="module")
def switched():
    """One environment that the determinism check switches from scene to scene."""
    environment = gymnasium.make(ENV_ID, scene=SCENES[-1], size=32)
    yield environment
    environment.close()


@pytest.mark.slow
@pytest.mark.parametrize(("index", "scene_id"), list(enumerate(SCENES)), ids=SCENES)
def test_every_scene_is_deterministic(switched, index, scene_id):
    """Same seed, same actions: identical observations at every step, in all 66 scenes.

    One environment is switched from scene to scene with ``reset(options={"scene": ...})``
    (so each scene is loaded after another one) and plays each scene twice, resetting with the
    seed alone the second time; for one scene of each body, a fresh environment plays it too,
    so a switch equals a fresh environment. Loading a scene makes a new OpenGL context, the
    cost of this test: a fresh environment for every scene as well took 113 s. One case per
    scene, so that pytest-xdist spreads them; each worker switches its own environment.
    """
    if switched.unwrapped.scene.id == scene_id:
        switched.reset(options={"scene": SCENES[index - 1]})  # loaded after another one
    actions = [int(a) for a in np.random.default_rng(index).integers(0, 6, size=5)]
    first = _rollout(switched, actions, seed=index, options={"scene": scene_id})
    second = _rollout(switched, actions, seed=index)
    runs = [first, second]
    if ONE_PER_BODY.get(get_scene(scene_id).body.id) == scene_id:
        fresh = gymnasium.make(ENV_ID, scene=scene_id, size=32)
        try:
            runs.append(_rollout(fresh, actions, seed=index))
        finally:
            fresh.close()
    for run in runs[1:]:
        assert len(run) == len(first) == len(actions) + 1, scene_id
        for step, ((obs_a, rest_a), (obs_b, rest_b)) in enumerate(zip(first, run, strict=True)):
            assert obs_a.shape == (32, 32, 3) and obs_a.dtype == np.uint8
            assert np.array_equal(obs_a, obs_b), f"{scene_id}: observation {step} differs"
            assert rest_a == rest_b, f"{scene_id}: step {step} differs"
