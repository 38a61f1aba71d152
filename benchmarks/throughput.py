"""Throughput benchmark: ``mirrorbench run`` against a fake OpenAI-compatible server on loopback.

The engine (``evaluation.runner.run``, the OpenAI adapter, rendering at 1024 x 1024, response
cache off) plays against ``benchmarks.fake_model_server``, which answers each request a fixed
latency after it arrives. The answer is a hash of the request's messages, so every
configuration plays the same episodes and the same steps. Each configuration runs in a fresh
child process with a fresh ``MIRRORBENCH_DATA_DIR``, against a fresh server process.

* **A**: the robot track at level 3 (18 episodes), latency 0.5 s, workers 1, 4, 8, 16, 64.
* **B**: the full run (66 scenes x 4 levels, 264 episodes), latency 2.0 s, 64 workers.

Figures per configuration, all for the ``run()`` call alone (imports and start-up excluded):

* ``ideal`` = steps x latency / workers; ``chain`` = the longest episode's steps x latency
  (its requests follow one another whatever the workers: what bounds a run with more workers
  than episodes); ``floor`` = (client + server CPU s) / cores; ``bound`` = max(ideal, chain,
  floor), a lower bound for any runner; ``ratio`` = wall / bound (target <= 1.3) and
  ``r_ideal`` = wall / max(ideal, floor).
* client CPU (user + sys of the child, every thread, the renderer's included) as a percentage
  of one core and per step (target: flat as workers grow); the server's CPU seconds.
* peak memory: the child's ``ru_maxrss`` (target < 1.5 GB at 64 workers).
* frames rendered / reused and the render pool's scene set-ups (``RunResult.frames``).
* ``idle%`` and ``steal%``: the machine's idle and stolen (hypervisor) core time during the
  run, as a share of cores x wall: a run slowed by other guests shows it there.

A runs ``--repeat`` rounds (3 by default), each configuration once per round in turn, and
reports each configuration's median run (by wall time) with every round's wall and ratio: the
speed of a shared machine drifts by a third within minutes. ``--quick`` skips B;
``--only A|B``, ``--workers 1,4``, ``--latency S``, ``--repeat N`` and ``--render-threads N``
(``run(render_threads=...)``) are for ad-hoc runs.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("PYOPENGL_PLATFORM", os.environ["MUJOCO_GL"])

ROOT = Path(__file__).resolve().parents[1]
MODEL_SPEC = "openai:fake-vlm"
A_WORKERS = (1, 4, 8, 16, 64)
A_LATENCY = 0.5
A_REPEAT = 3
"""Rounds of A: a shared machine's speed drifts by a third within minutes, so each
configuration runs once per round, in turn, and its median run is reported."""
B_WORKERS = 64
B_LATENCY = 2.0
TARGET_RATIO = 1.3
TARGET_PEAK_GB = 1.5
CHILD_TIMEOUT_S = 4 * 3600
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


# The child: one configuration, one run() call, one JSON line.


def machine_ticks() -> dict[str, float]:
    """The machine's idle and stolen CPU seconds so far, all cores (``/proc/stat``; zeros
    elsewhere). Stolen time is what the hypervisor gave to other guests: on a shared virtual
    machine it explains a slow run that no CPU figure of the process shows."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    except OSError:
        return {"idle_s": 0.0, "steal_s": 0.0}
    tick = os.sysconf("SC_CLK_TCK")
    values = [int(v) / tick for v in fields]
    return {"idle_s": values[3] + values[4], "steal_s": values[7] if len(values) > 7 else 0.0}


def one(args: argparse.Namespace) -> None:
    """Run one configuration and print ``RESULT {json}``."""
    import evaluation.runner as runner
    from evaluation.bundle import read_bundle
    from evaluation.registry import make_agent_factory
    from simulation.catalogue import select_scenes

    scenes = select_scenes(args.scenes)
    levels = [int(x) for x in args.levels.split(",")]
    factory, extras = make_agent_factory(
        MODEL_SPEC, seed=0, base_url=args.base_url, cache=None, allow_private=True
    )
    out = Path(os.environ["MIRRORBENCH_DATA_DIR"]) / "runs" / "throughput.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    before = resource.getrusage(resource.RUSAGE_SELF)
    machine_before = machine_ticks()
    start = time.perf_counter()
    result = runner.run(
        factory,
        scenes,
        levels,
        out,
        header_extra=extras,
        seed=0,
        workers=args.workers,
        render_threads=args.render_threads,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_SELF)
    machine_after = machine_ticks()
    bundle = read_bundle(out)
    by_episode = {(e["scene_id"], e["level"]): e for e in bundle.episodes}
    order = [(s.id, level) for s in scenes for level in levels]
    lengths = [len(by_episode[k]["steps"]) if k in by_episode else 0 for k in order]
    played = [[step["option"] for step in by_episode[k]["steps"]] for k in order if k in by_episode]
    steps = [step for e in bundle.episodes for step in e["steps"]]
    record = {
        "runner": runner.__file__,
        "workers": args.workers,
        "latency_s": args.latency,
        "episodes": len(bundle.episodes),
        "errors": sum(e["status"] != "completed" for e in bundle.episodes),
        "steps": len(steps),
        "bad_responses": sum(step["option"] is None for step in steps),
        "episode_steps": lengths,
        "chain_s": max(lengths, default=0) * args.latency,
        "played": hashlib.sha256(json.dumps(played).encode()).hexdigest()[:12],
        "wall_s": wall,
        "cpu_s": (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime),
        "cpu_total_s": after.ru_utime + after.ru_stime,
        "idle_s": machine_after["idle_s"] - machine_before["idle_s"],
        "steal_s": machine_after["steal_s"] - machine_before["steal_s"],
        "maxrss_kb": after.ru_maxrss,
        "rendered": result.frames.rendered,
        "reused": result.frames.reused,
        "render_threads": args.render_threads,
        "pool": dataclasses.asdict(result.frames),
    }
    print("RESULT " + json.dumps(record), flush=True)


# The parent: a server and a child per configuration, then the table.


def _stats(port: int) -> dict[str, Any]:
    with _NO_PROXY.open(f"http://127.0.0.1:{port}/stats", timeout=30) as response:
        stats: dict[str, Any] = json.load(response)
    return stats


def _start_server(latency: float) -> tuple[subprocess.Popen[str], int]:
    server = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.fake_model_server", "--latency", str(latency)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    line = server.stdout.readline()
    if not line.startswith("PORT "):
        server.kill()
        raise RuntimeError(f"the fake server did not start: {line!r}")
    return server, int(line.split()[1])


def measure(
    workers: int, latency: float, scenes: str, levels: str, render_threads: int | None
) -> dict[str, Any]:
    """Run one configuration in a fresh child against a fresh server; return its figures."""
    server, port = _start_server(latency)
    data = tempfile.mkdtemp(prefix="tp-data-")
    try:
        env = dict(os.environ)
        env.update(
            MIRRORBENCH_DATA_DIR=data,
            OPENAI_API_KEY="benchmark",
            MIRRORBENCH_ALLOW_PRIVATE_ENDPOINTS="1",
        )
        command = [
            sys.executable,
            "-m",
            "benchmarks.throughput",
            "--one",
            "--workers",
            str(workers),
            "--latency",
            str(latency),
            "--scenes",
            scenes,
            "--levels",
            levels,
            "--base-url",
            f"http://127.0.0.1:{port}/v1",
        ]
        if render_threads is not None:
            command += ["--render-threads", str(render_threads)]
        server_before = _stats(port)
        child = subprocess.run(
            command,
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            text=True,
            timeout=CHILD_TIMEOUT_S,
            check=False,
        )
        server_after = _stats(port)
        lines = [x for x in child.stdout.splitlines() if x.startswith("RESULT ")]
        if child.returncode != 0 or not lines:
            raise RuntimeError(f"child failed (exit {child.returncode}): {child.stdout[-2000:]}")
        record: dict[str, Any] = json.loads(lines[-1][len("RESULT ") :])
    finally:
        server.terminate()
        server.wait(timeout=30)
        shutil.rmtree(data, ignore_errors=True)
    record["server_cpu_s"] = server_after["cpu_s"] - server_before["cpu_s"]
    record["server_requests"] = server_after["requests"] - server_before["requests"]
    cores = os.cpu_count() or 1
    record["ideal_s"] = record["steps"] * latency / workers
    record["floor_s"] = (record["cpu_s"] + record["server_cpu_s"]) / cores
    record["bound_s"] = max(record["ideal_s"], record["chain_s"], record["floor_s"])
    record["ratio"] = record["wall_s"] / record["bound_s"]
    record["ratio_ideal"] = record["wall_s"] / max(record["ideal_s"], record["floor_s"])
    record["cpu_ms_per_step"] = 1000 * record["cpu_s"] / max(1, record["steps"])
    core_s = max(1e-9, record["wall_s"] * cores)
    record["idle_pct"] = 100 * record["idle_s"] / core_s
    record["steal_pct"] = 100 * record["steal_s"] / core_s
    return record


HEADER = (
    f"{'workers':>7} {'steps':>5} {'wall s':>7} {'ideal s':>7} {'chain s':>7} {'floor s':>7}"
    f" {'ratio':>5} {'r_ideal':>7} {'cli CPU%':>8} {'CPU ms/step':>11} {'srv CPU s':>9}"
    f" {'peak GB':>7} {'rendered':>8} {'reused':>6} {'idle%':>5} {'steal%':>6}"
)


def row(r: dict[str, Any]) -> str:
    def count(value: Any) -> str:
        return "n/a" if value is None else str(value)

    return (
        f"{r['workers']:>7} {r['steps']:>5} {r['wall_s']:>7.1f} {r['ideal_s']:>7.1f}"
        f" {r['chain_s']:>7.1f} {r['floor_s']:>7.1f} {r['ratio']:>5.2f} {r['ratio_ideal']:>7.2f}"
        f" {100 * r['cpu_s'] / r['wall_s']:>8.0f} {r['cpu_ms_per_step']:>11.0f}"
        f" {r['server_cpu_s']:>9.1f} {r['maxrss_kb'] / 1024**2:>7.2f}"
        f" {count(r['rendered']):>8} {count(r['reused']):>6}"
        f" {r['idle_pct']:>5.0f} {r['steal_pct']:>6.1f}"
    )


def _problems(r: dict[str, Any]) -> str:
    notes = []
    if r["errors"]:
        notes.append(f"{r['errors']} episodes ended in error")
    if r["bad_responses"]:
        notes.append(f"{r['bad_responses']} unreadable answers")
    if r["server_requests"] != r["steps"]:
        notes.append(f"server answered {r['server_requests']} requests for {r['steps']} steps")
    return "; ".join(notes)


def _median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run with the median wall time (the lower middle one of an even count)."""
    ordered = sorted(runs, key=lambda r: r["wall_s"])
    return ordered[(len(ordered) - 1) // 2]


def workload_a(
    workers: list[int], latency: float, render_threads: int | None, repeat: int = 1
) -> None:
    print(
        f"A: robot track, level 3, latency {latency} s, image 1024, cache off;"
        f" {repeat} round(s), the configurations in turn"
    )
    runs: dict[int, list[dict[str, Any]]] = {n: [] for n in workers}
    for round_ in range(1, repeat + 1):
        for n in workers:
            r = measure(n, latency, "robot", "3", render_threads)
            runs[n].append(r)
            print(
                f"   round {round_}, {n} workers: {r['wall_s']:.1f} s, ratio {r['ratio']:.2f},"
                f" {r['cpu_ms_per_step']:.0f} ms CPU/step, idle {r['idle_pct']:.0f}%,"
                f" steal {r['steal_pct']:.1f}%",
                flush=True,
            )
    print(f"   (engine: {runs[workers[0]][0]['runner']}; render_threads {render_threads})")
    print("   the median run of each configuration:")
    print(HEADER, flush=True)
    played = set()
    for n in workers:
        r = _median_run(runs[n])
        print(row(r), flush=True)
        for each in runs[n]:
            if note := _problems(each):
                print(f"        ! {note}")
            played.add((each["steps"], each["played"]))
        if pool := r.get("pool"):
            print(
                f"        pool: {pool['loads']} scene set-ups, {pool['shared']} shared,"
                f" {pool['render_s']:.1f} s in render threads",
                flush=True,
            )
        if len(runs[n]) > 1:
            walls = ", ".join(f"{each['wall_s']:.1f}" for each in runs[n])
            ratios = ", ".join(f"{each['ratio']:.2f}" for each in runs[n])
            print(f"        every round: wall {walls} s; ratio {ratios}")
    same = "yes" if len(played) == 1 else f"NO ({sorted(played)})"
    print(f"   same episodes in every run: {same}")
    print(
        f"   targets: ratio <= {TARGET_RATIO}, CPU ms/step flat, "
        f"peak < {TARGET_PEAK_GB} GB at 64 workers"
    )


def workload_b(latency: float, render_threads: int | None) -> None:
    print(f"B: full run, 66 scenes x 4 levels, latency {latency} s, {B_WORKERS} workers")
    print(HEADER, flush=True)
    r = measure(B_WORKERS, latency, "all", "0,1,2,3", render_threads)
    print(row(r), flush=True)
    if note := _problems(r):
        print(f"        ! {note}")
    print(f"   episodes {r['episodes']}, engine {r['runner']}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--one", action="store_true", help="(internal) run one configuration")
    parser.add_argument("--workers", help="comma-separated worker counts (A: 1,4,8,16,64)")
    parser.add_argument("--latency", type=float, help="server seconds per answer")
    parser.add_argument("--only", choices=("A", "B"), help="run one workload only")
    parser.add_argument("--quick", action="store_true", help="skip workload B")
    parser.add_argument("--render-threads", type=int, help="passed to run() if it takes it")
    parser.add_argument(
        "--repeat",
        type=int,
        default=A_REPEAT,
        help=f"rounds of workload A, medians reported (default {A_REPEAT})",
    )
    parser.add_argument("--scenes", default="robot", help="(with --one)")
    parser.add_argument("--levels", default="3", help="(with --one)")
    parser.add_argument("--base-url", help="(with --one) the fake server's /v1 URL")
    args = parser.parse_args(argv)
    if args.one:
        args.workers = int(args.workers or 1)
        args.latency = A_LATENCY if args.latency is None else args.latency
        one(args)
        return
    cores = os.cpu_count()
    print(f"MirrorBench throughput benchmark ({cores} cores, MUJOCO_GL={os.environ['MUJOCO_GL']})")
    if args.only in (None, "A"):
        workers = [int(x) for x in args.workers.split(",")] if args.workers else list(A_WORKERS)
        latency = A_LATENCY if args.latency is None else args.latency
        workload_a(workers, latency, args.render_threads, max(1, args.repeat))
    if args.only == "B" or (args.only is None and not args.quick):
        workload_b(B_LATENCY if args.latency is None else args.latency, args.render_threads)


if __name__ == "__main__":
    main()
