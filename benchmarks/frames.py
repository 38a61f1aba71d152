"""Frames benchmark (``make bench``): time to first frame, bytes per frame, runs beside rendering.

Three parts, each in a fresh data directory:

1. **Time to first frame** (server time through Django's test client, so no network): a frame
   never rendered, asked for by a cold web process (OpenGL context + scene + render + encode +
   store), one more unrendered frame of the same scene (the rendering thread is warm), and a
   stored one.
2. **Bytes per frame**: the PNG a model is shown, the viewer's WebP and the list thumbnail,
   over the frames of one scene's episodes, and what a full 264-episode run of distinct
   frames would hold.
3. **The oracle run beside rendering**: the oracle run that ``make run`` queues, played by a
   models worker (4 threads) (a) with nothing to render, (b) while every frame of a finished
   random run waits on the render queue, served by ``manage.py serve``'s render worker (1
   thread, nice 10), and (c) the same backlog with the layout before, one worker on both
   queues (the oracle run took 7.5 minutes in ``make run`` that way).

``BENCH_FRAME_SIZE`` (default 1024) sets the frame side; ``BENCH_SKIP_RUNS=1`` skips part 3.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("PYOPENGL_PLATFORM", os.environ["MUJOCO_GL"])

ROOT = Path(__file__).resolve().parents[1]
SIZE = int(os.environ.get("BENCH_FRAME_SIZE", "1024"))
SCENE = "male_0-mano_white-splash"


def _env(data: Path) -> dict[str, str]:
    return {**os.environ, "MIRRORBENCH_DATA_DIR": str(data), "MIRRORBENCH_LOG_LEVEL": "WARNING"}


def _manage(data: Path, *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=_env(data),
        check=True,
        capture_output=True,
        text=True,
    )
    return result.stdout


def _random_bundle(out: Path, data: Path) -> None:
    """Play the random baseline's 264 episodes into ``out`` (frame keys at ``SIZE``)."""
    mirrorbench = str(Path(sys.executable).parent / "mirrorbench")
    command = [mirrorbench, "run", "--agent", "random", "--out", str(out)]
    subprocess.run(
        [*command, "--image-size", str(SIZE)],
        cwd=ROOT,
        env=_env(data),
        check=True,
        capture_output=True,
    )


FIRST_FRAME = r"""
import json, statistics, sys, time
import django
django.setup()
from django.test import Client
from leaderboard.models import Episode, Frame
from leaderboard.frames.services import episode_frames_register, frames_render

size, scene = int(sys.argv[1]), sys.argv[2]
episodes = list(Episode.objects.select_related("scene", "run").filter(scene__scene_id=scene))
keys = []
for episode in episodes:
    keys += [k for k in episode_frames_register(episode) if k not in keys]
client = Client(HTTP_HOST="127.0.0.1")
def fetch(key):
    start = time.perf_counter()
    response = client.get(f"/frames/{key}.webp")
    b"".join(response.streaming_content)
    assert response.status_code == 200, response.status_code
    return (time.perf_counter() - start) * 1000
cold = fetch(keys[0])
warm = [fetch(k) for k in keys[1:6]]
stored = [fetch(keys[0]) for _ in range(20)]
frames_render(keys)  # every frame of the scene's episodes, for the byte counts
rows = Frame.objects.filter(pk__in=keys, stored__isnull=False)
print(json.dumps({
    "cold_ms": cold, "warm_ms": statistics.median(warm), "stored_ms": statistics.median(stored),
    "frames": rows.count(),
    "png": statistics.median(rows.values_list("png_bytes", flat=True)),
    "webp": statistics.median(rows.values_list("webp_bytes", flat=True)),
    "thumb": statistics.median(rows.values_list("thumb_bytes", flat=True)),
}))
"""

DISTINCT = r"""
import django
django.setup()
from leaderboard.models import Run
from leaderboard.frames.selectors import run_scene_cells
run = Run.objects.exclude(source="reported").get()
print(sum(len(set(c)) for c in run_scene_cells(run_id=run.pk).values()))
"""


def first_frame_and_bytes() -> None:
    import json

    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder)
        _manage(data, "prepare_data_dir")
        _manage(data, "migrate", "-v0")
        bundle = data / "random.jsonl"
        _random_bundle(bundle, data)
        _manage(data, "import_bundle", str(bundle), "--model", "Random", "--kind", "baseline")
        out = subprocess.run(
            [sys.executable, "-c", FIRST_FRAME, str(SIZE), SCENE],
            cwd=ROOT,
            env={**_env(data), "DJANGO_SETTINGS_MODULE": "mirrorbench_site.settings"},
            capture_output=True,
            text=True,
        )
        if out.returncode:
            raise SystemExit(out.stderr)
        figures = json.loads(out.stdout.strip().splitlines()[-1])
        distinct = int(
            subprocess.run(
                [sys.executable, "-c", DISTINCT],
                cwd=ROOT,
                env={**_env(data), "DJANGO_SETTINGS_MODULE": "mirrorbench_site.settings"},
                check=True,
                capture_output=True,
                text=True,
            ).stdout.strip()
        )
    print(f"time to first frame at {SIZE} px (server time, WebP):")
    print(f"  never rendered, cold web process  {figures['cold_ms']:8.0f} ms")
    print(f"  never rendered, warm renderer     {figures['warm_ms']:8.0f} ms (median of 5)")
    print(f"  stored                            {figures['stored_ms']:8.1f} ms (median of 20)")
    per_frame = figures["png"] + figures["webp"] + figures["thumb"]
    print(f"bytes per frame (median of {figures['frames']} frames of {SCENE}):")
    print(
        f"  PNG {figures['png'] / 1024:.0f} KiB, WebP {figures['webp'] / 1024:.0f} KiB, "
        f"thumbnail {figures['thumb'] / 1024:.1f} KiB; all three {per_frame / 1024:.0f} KiB"
    )
    print(
        f"  a random run's distinct frames: {distinct}, about {distinct * per_frame / 2**20:.0f} "
        f"MiB if every one is rendered"
    )


WAIT = r"""
import sys, time
import django
django.setup()
from leaderboard.models import Frame, Run
deadline = time.monotonic() + float(sys.argv[1])
run = None
while time.monotonic() < deadline:
    run = Run.objects.filter(agent="oracle").first()
    if run is not None and run.status == "completed":
        break
    time.sleep(0.5)
took = (run.finished - run.started).total_seconds() if run and run.finished else float("nan")
print(f"{took:.1f} {Frame.objects.filter(stored__isnull=False).count()}")
"""

QUEUE_ORACLE = (
    "from leaderboard.boards.entries import model_entry_upsert; "
    "from evaluation.config import RunConfig; "
    "from leaderboard.runs.services import run_create; "
    "run_create(model_entry=model_entry_upsert(name='Oracle', kind='baseline'), "
    "config=RunConfig(agent='oracle'))"
)


def _workers(data: Path, layout: str) -> list[subprocess.Popen[bytes]]:
    from mirrorbench_site.celery import worker_command

    env = _env(data)
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "cwd": ROOT, "env": env}
    if layout == "shared":  # one worker on both queues, as before
        return [subprocess.Popen(worker_command(concurrency=4, beat=False), **quiet)]
    models = worker_command(concurrency=4, beat=False, queues=("models",))
    procs = [subprocess.Popen(models, **quiet)]
    if layout == "split":
        render = worker_command(concurrency=1, beat=False, queues=("render",))
        procs.append(subprocess.Popen(render, preexec_fn=lambda: os.nice(10), **quiet))
    return procs


def oracle_beside_rendering() -> None:
    """The oracle run of ``make run`` while the random run's frames wait to be rendered."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mirrorbench_site.settings")
    import django

    django.setup()
    print(
        "the oracle run (264 episodes) while every frame of a finished random run waits on the "
        "render queue:"
    )
    with tempfile.TemporaryDirectory() as folder:
        bundle = Path(folder) / "random.jsonl"
        _random_bundle(bundle, Path(folder))
        for layout, backlog, label in (
            ("models", False, "models worker alone, nothing to render"),
            ("split", True, "models worker + render worker apart (1 thread, nice 10)"),
            ("shared", True, "one worker on both queues (the layout before)"),
        ):
            with tempfile.TemporaryDirectory() as scratch:
                data = Path(scratch)
                _manage(data, "prepare_data_dir")
                _manage(data, "migrate", "-v0")
                _manage(
                    data, "import_bundle", str(bundle), "--model", "Random", "--kind", "baseline"
                )
                if backlog:
                    _manage(data, "render_frames", "--queue")
                _manage(data, "shell", "-c", QUEUE_ORACLE)
                procs = _workers(data, layout)
                try:
                    out = subprocess.run(
                        [sys.executable, "-c", WAIT, "900"],
                        cwd=ROOT,
                        env={**_env(data), "DJANGO_SETTINGS_MODULE": "mirrorbench_site.settings"},
                        check=True,
                        capture_output=True,
                        text=True,
                    ).stdout
                finally:
                    for proc in procs:
                        proc.terminate()
                    for proc in procs:
                        proc.wait(timeout=120)
            took, frames = out.split()
            print(f"  {label:58} oracle {float(took):6.1f} s ({frames} frames rendered meanwhile)")


def main() -> None:
    print(f"MirrorBench frames benchmark ({SIZE} px, MUJOCO_GL={os.environ['MUJOCO_GL']})")
    first_frame_and_bytes()
    if os.environ.get("BENCH_SKIP_RUNS") != "1":
        oracle_beside_rendering()


if __name__ == "__main__":
    main()
