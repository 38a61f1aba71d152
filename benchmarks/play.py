"""Play benchmark (``make bench``): key press to next frame shown, in a real browser.

A fresh data directory, ``gunicorn`` (one worker, so one rendering thread, as a small site
runs) on a free 127.0.0.1 port and headless chromium playing ``/play/`` as an anonymous
visitor: each scene's shortest path to the mark, key by key. ``static/js/play.js`` times every
move with ``performance.now()`` from the key press to the next frame decoded and painted
(``data-last-step-ms``), and the answer's POST alone (``data-last-post-ms``).

1. **Unrendered frames, key at once**: every view of the first pass is new and the next key
   is pressed as soon as a frame shows, before the server's prefetch of the next views
   (``frames_prefetch``) can finish (after a warm-up episode, which pays for the OpenGL
   context).
2. **Unrendered frames, step read**: other scenes, new views too, but the player reads each
   step for ``BENCH_PLAY_READ_S`` seconds (default 1.5) before the key, as a person does: the
   next views are made meanwhile.
3. **Stored frames**: the first pass's moves again in new episodes; every frame is in the store.

``BENCH_FRAME_SIZE`` (default 1024) sets the frame side, ``BENCH_PLAY_SCENES`` and
``BENCH_PLAY_READ_SCENES`` the scenes.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("PYOPENGL_PLATFORM", os.environ["MUJOCO_GL"])

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.load import free_port, server_stop, server_wait  # noqa: E402
from evaluation.agents import oracle_options  # noqa: E402
from simulation.catalogue import get_scene  # noqa: E402

SIZE = int(os.environ.get("BENCH_FRAME_SIZE", "1024"))
SCENES = os.environ.get(
    "BENCH_PLAY_SCENES",
    "male_1-mano_white-splash,female_0-mano_white-leaf_0,male_0-mano_brown-bread",
).split(",")
READ_SCENES = os.environ.get(
    "BENCH_PLAY_READ_SCENES",
    "male_0-mano_white-leaf_1,female_1-mano_purple-splash,male_1-mano_brown-bread",
).split(",")
READ_S = float(os.environ.get("BENCH_PLAY_READ_S", "1.5"))
CHROMIUM = "/usr/bin/chromium"


def shortest_path(scene_id: str) -> list[int]:
    """Return the shortest moves to the mark (the oracle's), x first, never colliding."""
    return oracle_options(get_scene(scene_id))


def _env(data: Path) -> dict[str, str]:
    return {
        **os.environ,
        "MIRRORBENCH_DATA_DIR": str(data),
        "MIRRORBENCH_LOG_LEVEL": "WARNING",
        "MIRRORBENCH_PLAY_IMAGE_SIZE": str(SIZE),
        "MIRRORBENCH_PLAY_RATE": "100000/hour",
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }


def _server(data: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    for args in (("prepare_data_dir",), ("migrate", "-v0")):
        subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=_env(data), check=True)
    command = [
        sys.executable,
        "-m",
        "gunicorn",
        "mirrorbench_site.wsgi:application",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        "1",
        "--threads",
        "4",
        "--timeout",
        "120",
        "--chdir",
        str(ROOT),
    ]
    with open(log, "wb") as out:
        server = subprocess.Popen(
            command,
            cwd=ROOT,
            env=_env(data),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return server_wait(server, port, "/play/", log)


def _play(
    page, url: str, scene_id: str, options: list[int], read_s: float = 0.0
) -> list[tuple[int, int]]:
    """Play one episode by keys, reading each step ``read_s`` seconds first; return (key to
    frame shown, POST) in ms for each move."""
    page.goto(f"{url}/play/")
    page.locator("select[name=level]").select_option("0")
    page.locator("select[name=scene]").select_option(scene_id)
    page.get_by_role("button", name="Start an episode").click()
    page.wait_for_selector('.play-current .frame-box[data-state="ready"]', timeout=120_000)
    root = page.locator("[data-play]")
    times = []
    for step, option in enumerate(options, 1):
        if read_s:
            page.wait_for_timeout(read_s * 1000)
        page.keyboard.press(str(option))
        page.wait_for_function(
            "n => document.querySelector('[data-play]').dataset.steps === n",
            arg=str(step),
            timeout=120_000,
        )
        times.append(
            (
                int(root.get_attribute("data-last-step-ms")),
                int(root.get_attribute("data-last-post-ms")),
            )
        )
    return times


def _row(label: str, times: list[tuple[int, int]]) -> str:
    shown = sorted(t for t, _ in times)
    posts = sorted(p for _, p in times)
    p90 = shown[min(len(shown) - 1, int(0.9 * len(shown)))]
    return (
        f"| {label} | {len(times)} | {statistics.median(shown):.0f} ms | {p90} ms | "
        f"{statistics.median(posts):.0f} ms |"
    )


def main() -> None:
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="mirrorbench-play-") as folder:
        data = Path(folder)
        port = free_port()
        server = _server(data, port, data / "gunicorn.log")
        url = f"http://127.0.0.1:{port}"
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"]
                )
                page = browser.new_page(viewport={"width": 1366, "height": 900})
                # Warm-up, not counted: the first frames pay for the OpenGL context.
                _play(page, url, "tienkung-allegro-logo_0", [1])
                unrendered: list[tuple[int, int]] = []
                read: list[tuple[int, int]] = []
                stored: list[tuple[int, int]] = []
                for scene_id in SCENES:
                    unrendered += _play(page, url, scene_id, shortest_path(scene_id))
                for scene_id in READ_SCENES:
                    read += _play(page, url, scene_id, shortest_path(scene_id), READ_S)
                for scene_id in SCENES:
                    stored += _play(page, url, scene_id, shortest_path(scene_id))
                browser.close()
        finally:
            server_stop(server)
    print(f"Play: key press to next frame shown, {SIZE} px, gunicorn 1 worker x 4 threads")
    print("| frame | moves | median | p90 | median POST |")
    print("|---|---:|---:|---:|---:|")
    print(_row("unrendered, key at once", unrendered))
    print(_row(f"unrendered, step read {READ_S:g} s", read))
    print(_row("stored", stored))


if __name__ == "__main__":
    main()
