"""Rendering backends: what `mirrorbench renderers` says, and a clear error for one that cannot run.

Isaac Sim cannot run here (no RTX GPU, Python 3.11): these tests check the refusals and that the
Isaac backend imports without it; ``scripts/isaac-smoke.sh`` renders with it on a GPU machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from evaluation.cli import main
from simulation import isaac_backend
from simulation.backends import (
    backend_status,
    make_renderer,
    make_renderer_from_env,
    renderer_version,
)
from simulation.isaac_backend import has_rt_cores
from simulation.renderer import BackendError, mujoco_renderer_version

ISAAC_HERE = backend_status("isaac").available
needs_no_isaac = pytest.mark.skipif(ISAAC_HERE, reason="Isaac Sim can run on this machine")


def test_renderers_lists_every_backend_with_its_state(capsys):
    assert main(["renderers"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == ["mujoco", "isaac"]
    assert lines[0].split()[1] == "available"
    assert main(["renderers", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in rows] == ["mujoco", "isaac"]
    assert rows[0]["available"] is True


@needs_no_isaac
def test_renderers_says_why_isaac_cannot_run(capsys):
    main(["renderers"])
    isaac = capsys.readouterr().out.splitlines()[1]
    assert isaac.split()[1] == "unavailable"
    if sys.version_info[:2] != (3, 12):
        assert "wrong Python: Isaac Sim 6.x needs 3.12" in isaac
    assert "no module: isaacsim is not installed" in isaac


def test_a_gpu_without_rt_cores_is_no_gpu_for_isaac(monkeypatch):
    monkeypatch.setattr(isaac_backend, "nvidia_gpus", lambda: ["NVIDIA H200"])
    status = backend_status("isaac")
    assert not status.available
    assert "no RTX GPU: nvidia-smi lists NVIDIA H200, none with RT cores" in status.detail


@pytest.mark.parametrize(
    ("name", "rtx"),
    [
        ("NVIDIA GeForce RTX 4090", True),
        ("NVIDIA RTX A6000", True),
        ("NVIDIA L40S", True),
        ("NVIDIA A10G", True),
        ("NVIDIA H200", False),
        ("NVIDIA A100-SXM4-80GB", False),
        ("NVIDIA H100 80GB HBM3", False),
    ],
)
def test_it_knows_which_gpus_have_rt_cores(name, rtx):
    assert has_rt_cores(name) is rtx


@needs_no_isaac
def test_asking_for_isaac_here_is_a_clear_error_not_a_fallback(monkeypatch):
    with pytest.raises(BackendError, match=r"renderer 'isaac' is not available here: .*isaacsim"):
        make_renderer("isaac")
    monkeypatch.setenv("MIRRORBENCH_RENDERER", "isaac")
    with pytest.raises(BackendError, match="not available here"):
        make_renderer_from_env()
    # Frame keys name the configured backend: with isaac configured but not installed there is
    # no version to key frames by, so nothing is rendered or keyed as MuJoCo's by mistake.
    with pytest.raises(BackendError, match="isaacsim is not installed"):
        renderer_version()


def test_an_unknown_renderer_names_the_choices(monkeypatch):
    with pytest.raises(
        BackendError, match="unknown renderer 'vulkan'; choose one of mujoco, isaac"
    ):
        make_renderer("vulkan")
    monkeypatch.setenv("MIRRORBENCH_RENDERER", "vulkan")
    with pytest.raises(BackendError, match="MIRRORBENCH_RENDERER='vulkan'"):
        make_renderer_from_env()


def test_mujoco_is_the_default_and_keeps_its_version(monkeypatch):
    monkeypatch.delenv("MIRRORBENCH_RENDERER", raising=False)
    assert renderer_version() == mujoco_renderer_version()
    renderer = make_renderer_from_env()
    try:
        assert renderer.version == mujoco_renderer_version()
    finally:
        renderer.close()


@needs_no_isaac
def test_render_with_an_unavailable_renderer_exits_2_on_one_line(tmp_path, capsys):
    out = tmp_path / "f.png"
    args = ["render", "--scene", "male_0-mano_white-splash", "--out", str(out), "--size", "32"]
    assert main([*args, "--renderer", "isaac"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("mirrorbench: error: renderer 'isaac' is not available here:")
    assert "\n" not in err
    assert not out.exists()


@needs_no_isaac
def test_the_render_pool_refuses_an_unavailable_renderer(monkeypatch):
    from evaluation.render_pool import _pool_renderer

    monkeypatch.setenv("MIRRORBENCH_RENDERER", "isaac")
    with pytest.raises(BackendError, match="not available here"):
        _pool_renderer(4, 8)


def test_the_isaac_backend_imports_without_isaac_sim_or_pxr():
    code = (
        "import sys, simulation.isaac_backend as b; "
        "assert 'pxr' not in sys.modules and 'isaacsim' not in sys.modules; "
        "r = b.IsaacRenderer(); print(type(r).__name__)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "IsaacRenderer"


@needs_no_isaac
def test_loading_a_scene_in_isaac_here_says_why_it_cannot():
    from simulation.catalogue import get_scene
    from simulation.isaac_backend import IsaacRenderer

    with pytest.raises(BackendError, match="not available here"):
        IsaacRenderer().load(get_scene("male_0-mano_white-splash"))


def _rtx_gpu() -> str | None:
    return next((name for name in isaac_backend.nvidia_gpus() or [] if has_rt_cores(name)), None)


def test_the_isaac_smoke_script_skips_without_an_rtx_gpu_and_says_why():
    if _rtx_gpu():
        pytest.skip("this machine has an RTX GPU: the smoke script would install Isaac Sim")
    result = subprocess.run(
        ["bash", "scripts/isaac-smoke.sh"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 77
    assert result.stdout.startswith("SKIP: no ")


def test_the_isaac_smoke_script_passes_on_an_rtx_gpu():
    gpu = _rtx_gpu()
    if gpu is None:
        pytest.skip(
            "scripts/isaac-smoke.sh needs an NVIDIA GPU with RT cores "
            f"({backend_status('isaac').detail})"
        )
    if os.environ.get("MIRRORBENCH_ISAAC_SMOKE") != "1":
        pytest.skip(f"{gpu} can run Isaac Sim: MIRRORBENCH_ISAAC_SMOKE=1 runs the smoke script")
    result = subprocess.run(
        ["bash", "scripts/isaac-smoke.sh"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
