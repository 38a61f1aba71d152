"""The ``mirrorbench`` command line.

Errors in arguments (unknown scenes, bad sizes, bad offsets) print one line naming the valid
choices and exit with status 2.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from evaluation.bundle import BundleError, episode_results, read_bundle, tool_version
from evaluation.confusion import BehaviourTable, behaviour_json
from evaluation.errors import ErrorCounts, error_counts
from evaluation.metrics import (
    LevelTable,
    RepeatSpread,
    cognitive_stability,
    repeat_spread,
    score_json,
)
from evaluation.paths import data_dir
from evaluation.process_metrics import ATTRIBUTION, process_json
from evaluation.prompts import messages_as_text
from evaluation.vocabulary import (
    AVG,
    CONDITION_SUMMARIES,
    ERROR,
    LEVEL_KEYS,
    MAIN_CONDITION,
    METRICS,
    TRACK_KEYS,
    TRACKS,
    conditions_text,
    level_label,
    levels_text,
    metric_label,
    parse_condition,
    parse_levels,
    track_label,
)
from simulation.catalogue import Scene, UnknownSceneError, get_scene, scene_set, select_scenes
from simulation.dynamics import Vec3, hand_position_mm, is_collision_free
from simulation.renderer import DEFAULT_SIZE, MAX_SIZE, BackendError
from simulation.versions import BENCHMARK_VERSION

if TYPE_CHECKING:
    from evaluation.config import RunConfig
    from evaluation.run_file import Execution

EXIT_USAGE = 2


class UsageError(Exception):
    """A bad argument: reported on one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)


def _size(text: str) -> int:
    try:
        size = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--size must be an integer from 16 to {MAX_SIZE}, got {text!r}"
        ) from None
    if not 16 <= size <= MAX_SIZE:
        raise argparse.ArgumentTypeError(
            f"--size must be an integer from 16 to {MAX_SIZE}, got {size}"
        )
    return size


def _offset(text: str) -> Vec3:
    parts = text.split(",")
    try:
        dx, dy, dz = (int(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--offset must be three whole steps DX,DY,DZ (e.g. -2,1,0), got {text!r}"
        ) from None
    return (dx, dy, dz)


def _open_renderer(shadows: bool = True, name: str | None = None):
    from simulation.backends import configured_backend, make_renderer

    try:
        return make_renderer(name or configured_backend(), shadows=shadows)
    except BackendError as exc:
        raise UsageError(str(exc)) from None


def _save_png(image: np.ndarray, path: Path) -> None:
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(image).save(path, format="PNG", optimize=False)


def cmd_scenes(args: argparse.Namespace) -> int:
    scenes = list(scene_set().values())
    if args.json:
        json.dump([s.summary() for s in scenes], sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    print(f"{'id':42} {'track':6} {'d0':>3} {'max':>4}")
    for s in scenes:
        print(f"{s.id:42} {s.track:6} {s.d0_steps:>3} {s.max_steps:>4}")
    counts = ", ".join(
        f"{sum(1 for s in scenes if s.track == track)} {track}" for track in TRACK_KEYS.values()
    )
    print(f"{len(scenes)} scenes ({counts})")
    return 0


def _check_offset(scene: Scene, cell: Vec3) -> None:
    if not is_collision_free(scene, cell):
        x_mm = hand_position_mm(scene, cell)[0]
        raise UsageError(
            f"--offset {','.join(map(str, cell))} puts the hand at x={x_mm / 1000:.2f} m, inside "
            f"the body or the mirror; the hand's centre must stay within "
            f"x=[{(scene.body.front_x_mm + 50) / 1000:.2f}, 1.90] m"
        )


def cmd_render(args: argparse.Namespace) -> int:
    scene = get_scene(args.scene, args.condition)
    cell = args.offset
    _check_offset(scene, cell)
    with _open_renderer(shadows=not args.no_shadows, name=args.renderer) as renderer:
        renderer.load(scene, mirror=not args.no_mirror)
        renderer.set_hand(cell)
        _save_png(renderer.render(args.size), Path(args.out))
    print(args.out)
    return 0


def cmd_gallery(args: argparse.Namespace) -> int:
    out = Path(args.out)
    scenes = select_scenes(args.scenes)
    rows = []
    with _open_renderer() as renderer:
        for i, scene in enumerate(scenes, 1):
            renderer.load(scene)
            _save_png(renderer.render(args.size), out / f"{scene.id}.png")
            rows.append(scene)
            print(f"[{i}/{len(scenes)}] {scene.id}", file=sys.stderr)
    (out / "index.html").write_text(_gallery_html(rows))
    print(out / "index.html")
    return 0


def cmd_export_usd(args: argparse.Namespace) -> int:
    from simulation.usd_export import export_scenes

    if bool(args.scene) == args.all:
        raise UsageError("export-usd: give --scene ID or --all")
    scenes = list(scene_set().values()) if args.all else [get_scene(args.scene)]
    for result in export_scenes(scenes, Path(args.out), mirror=not args.no_mirror):
        print(result.path)
    return 0


def cmd_renderers(args: argparse.Namespace) -> int:
    from simulation.backends import backend_statuses

    statuses = backend_statuses()
    if args.json:
        rows = [{"name": s.name, "available": s.available, "detail": s.detail} for s in statuses]
        json.dump(rows, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    for status in statuses:
        state = "available" if status.available else "unavailable"
        print(f"{status.name:8} {state:12} {status.detail}")
    return 0


def _gallery_html(scenes: Sequence[Scene]) -> str:
    cards = []
    for s in scenes:
        cards.append(
            f'<figure><a href="{html.escape(s.id)}.png"><img src="{html.escape(s.id)}.png" '
            f'alt="{html.escape(s.id)}" loading="lazy"></a><figcaption><b>{html.escape(s.id)}</b>'
            f"<br>{s.track} · d0 {s.d0_steps} · budget {s.max_steps}"
            f"<br>body: {html.escape(s.body.description)}"
            f"<br>hand: {html.escape(s.hand.description)}"
            f"<br>mark: {html.escape(s.mark.description)}</figcaption></figure>"
        )
    return (
        "<!doctype html><html lang='en'><meta charset='utf-8'>"
        "<title>MirrorBench scene gallery</title><style>"
        "body{font:14px system-ui,sans-serif;margin:1rem;background:#fafafa;color:#222}"
        "main{display:grid;grid-template-columns:repeat(auto-fill,minmax(260px,1fr));gap:1rem}"
        "figure{margin:0;background:#fff;border:1px solid #ddd;padding:.5rem}"
        "img{width:100%;height:auto;display:block}figcaption{margin-top:.4rem;line-height:1.35}"
        f"</style><h1>MirrorBench scene gallery ({len(scenes)} scenes)</h1><main>"
        + "".join(cards)
        + "</main></html>\n"
    )


def _levels(text: str) -> tuple[int, ...]:
    try:
        return parse_levels(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--levels {exc}") from None


def _level(text: str) -> int:
    if text not in LEVEL_KEYS:
        raise argparse.ArgumentTypeError(f"--level must be one of {levels_text()}, got {text!r}")
    return int(text)


def _condition(text: str) -> str:
    try:
        return parse_condition(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def cmd_prompt(args: argparse.Namespace) -> int:
    """Print the messages of the step after ``--moves`` (images as named placeholders)."""
    from evaluation.preview import EpisodeOver, parse_moves, prompt_after

    scene = get_scene(args.scene, args.condition)
    try:
        preview = prompt_after(scene, args.level, parse_moves(args.moves), args.size)
    except (EpisodeOver, ValueError) as exc:
        print(f"mirrorbench prompt: {exc}", file=sys.stderr)
        return 2
    print(messages_as_text(preview.messages))
    return 0


def _episode_ref(text: str) -> tuple[str, int]:
    scene_id, _, level = text.rpartition(":")
    if not scene_id or level not in LEVEL_KEYS:
        raise argparse.ArgumentTypeError(
            f"--episode must be SCENE:LEVEL with a level of {levels_text()}, e.g. "
            f"male_0-mano_white-splash:3, got {text!r}"
        )
    return scene_id, int(level)


def cmd_replay_html(args: argparse.Namespace) -> int:
    """Write one episode of a bundle as a self-contained HTML replay (frames rendered here)."""
    from evaluation.registry import AGENTS, agent_looks
    from evaluation.render_pool import RenderPool
    from evaluation.replay_html import (
        EpisodeNotFound,
        bundle_episode,
        bundle_replay_episode,
        episode_views,
        frame_webp,
        frames_notice,
        replay_html,
    )

    path = Path(args.bundle)
    bundle = read_bundle(path)
    scene_id, level = args.episode
    try:
        record = bundle_episode(bundle.episodes, scene_id=scene_id, level=level)
    except EpisodeNotFound as exc:
        raise UsageError(f"--episode: {exc}") from None
    # A control bundle's views are its condition's: its mirror, its mark.
    scene = get_scene(scene_id, str(bundle.header.get("condition", MAIN_CONDITION)))
    rendered_with = bundle.header.get("renderer") or {}
    size = rendered_with.get("image_size", DEFAULT_SIZE)
    if not isinstance(size, int) or not 16 <= size <= MAX_SIZE:
        raise UsageError(f"{path}: the header's renderer.image_size must be 16 to {MAX_SIZE}")
    views = episode_views(record["steps"], record["distances"])
    with RenderPool(1) as pool:
        frames = [frame_webp(pool.render(scene, tuple(v["cell"]), size)[0]) for v in views]
        version = pool.version()
    agent = str((bundle.header.get("agent") or {}).get("name") or "")
    # A header names a baseline without its argument (scripted, not scripted:FILE).
    looks = AGENTS[agent].looks if agent in AGENTS else agent_looks(agent)
    episode = bundle_replay_episode(
        bundle.header,
        record,
        source=f"From the results bundle {path.name}; frames rendered by mirrorbench "
        f"{tool_version()}.",
        notice=frames_notice(
            looks=looks,
            renderer=version,
            agent_renderer=rendered_with.get("version"),
        ),
    )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(replay_html(episode=episode, views=views, frames=frames), encoding="utf-8")
    print(f"{out}  {len(views)} views at {size} px, {out.stat().st_size:,} bytes")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    """Evaluate an agent and write its results bundle."""
    from evaluation.agents import ScriptError
    from evaluation.cache import ResponseCache
    from evaluation.config import agent_factory
    from evaluation.registry import AgentSpecError
    from evaluation.runner import ResumeError, run

    config, execution = _run_options(args)
    try:
        scenes = select_scenes(config.scenes, config.condition)
        spec = config.agent_spec
    except (UnknownSceneError, AgentSpecError) as exc:
        raise UsageError(str(exc)) from None
    if not scenes:
        raise UsageError("--scenes selected no scene; use all, human, robot or scene ids")
    cache = None
    if config.use_cache and spec.is_model:
        cache = ResponseCache(data_dir() / "cache" / "responses.sqlite3")
    try:
        try:
            factory = agent_factory(
                config,
                cache=cache,
                # The command line runs on the user's own machine, for the user: a model server
                # on loopback or the local network is theirs to call. The site's workers keep
                # the public-only policy (evaluation/outbound.py).
                allow_private=True,
            )
        # A missing API key names its variable; a person's agent is not run here.
        except (ScriptError, AgentSpecError, RuntimeError) as exc:
            raise UsageError(str(exc)) from None
        safe_name = re.sub(r"[^A-Za-z0-9._-]+", "_", config.agent)
        out = Path(execution.out) if execution.out else data_dir() / "runs" / f"{safe_name}.jsonl"
        try:
            result = run(
                factory,
                config,
                out,
                workers=execution.workers,
                render_threads=execution.render_threads,
                resume=execution.resume,
                progress_stream=sys.stderr,
            )
        except ResumeError as exc:
            raise UsageError(str(exc)) from None
    finally:
        if cache is not None:
            cache.close()
    frames = result.frames
    rendered = (
        f", {frames.rendered} frames rendered ({frames.reused + frames.shared} reused)"
        if frames.rendered or frames.reused
        else ""
    )
    print(
        f"{result.path}: {result.ran} episodes run, {result.skipped} kept from before, "
        f"{result.errors} transport errors, {result.seconds:.1f} s{rendered}",
        file=sys.stderr,
    )
    print(result.path)
    return 0


def _run_options(args: argparse.Namespace) -> tuple[RunConfig, Execution]:
    """Return the run's configuration and execution: ``--config FILE``'s, with the options
    given on the command line in place of the file's (docs/exports.md, Run files)."""
    from evaluation.config import RunConfig, RunConfigError
    from evaluation.run_file import Execution, load_run_file

    data: dict[str, object] = {}
    execution = Execution()
    try:
        if args.config:
            loaded = load_run_file(Path(args.config))
            data, execution = loaded.config.as_dict(), loaded.execution
        given = {
            "agent": args.agent,
            "levels": list(args.levels) if args.levels is not None else None,
            "scenes": args.scenes,
            "condition": args.condition,
            "base_url": args.base_url,
            "seed": args.seed,
            "image_size": args.image_size,
            "image_history": args.image_history,
            # Temperature 0 and no seed; --max-tokens only when given (protocol v3).
            "max_tokens": args.max_tokens,
            "use_cache": False if args.no_cache else None,
            "repeats": args.repeats,
        }
        data |= {key: value for key, value in given.items() if value is not None}
        if "agent" not in data:
            raise UsageError("run: give --agent, or --config FILE with an agent")
        config = RunConfig.from_dict(data)
    except RunConfigError as exc:
        where = f"{args.config}: " if args.config else ""
        raise UsageError(f"{where}{exc}") from None
    execution = Execution(
        workers=args.workers if args.workers is not None else execution.workers,
        render_threads=(
            args.render_threads if args.render_threads is not None else execution.render_threads
        ),
        out=args.out or execution.out,
        resume=args.resume or execution.resume,
    )
    return config, execution


def cmd_verify(args: argparse.Namespace) -> int:
    from evaluation.verify import MAX_PROBLEMS, verify_bundle

    start = time.perf_counter()
    bundle = read_bundle(Path(args.bundle))
    problems = verify_bundle(bundle)
    elapsed = time.perf_counter() - start
    for problem in problems:
        print(f"{args.bundle}: {problem}")
    if problems:
        stopped = len(problems) > MAX_PROBLEMS  # the last line says that checking stopped
        count = f"at least {MAX_PROBLEMS}" if stopped else str(len(problems))
        print(f"FAILED: {count} discrepancies", file=sys.stderr)
        return 1
    errors = sum(1 for e in bundle.episodes if e["status"] == ERROR)
    print(
        f"OK: {len(bundle.episodes)} episodes agree with the replay "
        f"({errors} excluded as transport errors), checked in {elapsed * 1000:.0f} ms"
    )
    return 0


EXIT_REJECTED = 1
EXIT_UNREACHABLE = 3


def cmd_submit(args: argparse.Namespace) -> int:
    """Upload a bundle to a site; print the submission's URL or the reasons it was refused."""
    from evaluation.registry import AgentSpecError, parse_agent_spec
    from evaluation.submit import SubmitError, submit_bundle

    token = args.token or os.environ.get("MIRRORBENCH_TOKEN", "")
    if not token:
        raise UsageError(
            "--token: give an API token (create one on your profile page) or set MIRRORBENCH_TOKEN"
        )
    path = Path(args.bundle)
    if not path.is_file():
        raise UsageError(f"{args.bundle}: no such file")
    metadata = {
        "model_name": args.model,
        "kind": args.kind,
        "organisation": args.organisation,
        "params_b": args.params_b,
        "link": args.link,
    }
    if args.reproduce:
        try:
            reproduce = parse_agent_spec(args.reproduce)
        except AgentSpecError:
            reproduce = None
        if reproduce is None or not reproduce.is_model:
            raise UsageError(f"--reproduce: expected PROVIDER:MODEL, got {args.reproduce!r}")
        metadata |= {
            "reproduce_provider": reproduce.provider,
            "reproduce_model": reproduce.model,
            "reproduce_base_url": args.reproduce_base_url,
            "reproduce_api_key": os.environ.get("MIRRORBENCH_REPRODUCE_API_KEY", ""),
        }
    try:
        result = submit_bundle(path, url=args.url, token=token, metadata=metadata)
    except SubmitError as exc:
        print(f"mirrorbench: error: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    stream = sys.stdout if result.ok else sys.stderr
    for line in result.lines:
        print(line, file=stream)
    return 0 if result.ok else EXIT_REJECTED


def cmd_import_inspect(args: argparse.Namespace) -> int:
    """Turn a finished Inspect log of mirrorbench/mirror_test into a results bundle, then
    verify it; print why a log is refused."""
    try:
        # The inspect extra is optional: Inspect AI loads only for this command.
        from mirrorbench.logs import InspectLogRefused, convert_log, write_bundle
    except ModuleNotFoundError as exc:
        if exc.name != "inspect_ai" and not (exc.name or "").startswith("inspect_ai."):
            raise
        raise UsageError(
            "import-inspect needs Inspect AI: pip install 'mirrorbench-msr[inspect]'"
        ) from None
    from evaluation.verify import verify_bundle

    path = Path(args.log)
    if not path.is_file():
        raise UsageError(f"{args.log}: no such file")
    try:
        converted = convert_log(path)
    except InspectLogRefused as exc:
        print(f"mirrorbench: refused: {exc}", file=sys.stderr)
        return EXIT_REJECTED
    out = Path(args.out)
    write_bundle(converted, out)
    problems = verify_bundle(read_bundle(out))
    for problem in problems:
        print(f"{out}: {problem}", file=sys.stderr)
    if problems:
        print(f"FAILED: the bundle does not verify ({len(problems)} problems)", file=sys.stderr)
        return EXIT_REJECTED
    errors = sum(1 for e in converted.episodes if e["status"] != "completed")
    print(
        f"{out}: {len(converted.episodes)} episodes from {path.name} "
        f"({errors} excluded as errors); verify: OK"
    )
    return 0


def _bundle_verifies(bundle: Any, name: str, command: str, refusal: str) -> bool:
    """Whether ``bundle`` verifies; if not, print its first 20 problems and that ``command``
    did nothing (``refusal``). Only what verifies is scored or exported: a crafted bundle (a
    duplicated episode, a step that disagrees with the replay) would otherwise be taken as
    it claims, or end in a traceback."""
    from evaluation.verify import verify_bundle

    problems = verify_bundle(bundle)
    for problem in problems[:20]:
        print(f"{name}: {problem}", file=sys.stderr)
    if problems:
        print(
            f"{command}: the bundle does not verify ({len(problems)} problems); {refusal}",
            file=sys.stderr,
        )
    return not problems


def cmd_export_parquet(args: argparse.Namespace) -> int:
    """Write a bundle's per-episode details as parquet with a dataset card (docs/exports.md)."""
    from evaluation.details import details, write_details

    bundle = read_bundle(Path(args.bundle))
    # Only what verifies is exported: the tables re-score to the run's tables.
    if not _bundle_verifies(bundle, args.bundle, "export-parquet", "nothing was written"):
        return 1
    written = write_details(details(bundle.header, bundle.episodes), Path(args.out))
    for name, path in written.paths.items():
        print(f"{path}  {written.sizes[name]:,} bytes")
    return 0


def cmd_export_eee(args: argparse.Namespace) -> int:
    """Write a bundle's results in the Every Eval Ever schema, at their datastore paths
    (docs/exports.md)."""
    from evaluation.details import details
    from evaluation.eee import (
        bundle_model,
        bundle_source,
        bundle_time,
        eee_export,
        scores_from_results,
        write_eee,
    )

    bundle = read_bundle(Path(args.bundle))
    try:
        model = bundle_model(bundle.header, args.model_id)
    except ValueError as exc:
        raise UsageError(f"--model-id: {exc}") from None
    # Only what verifies is exported, as with export-parquet: the scores are the bundle's.
    if not _bundle_verifies(bundle, args.bundle, "export-eee", "nothing was written"):
        return 1
    export = eee_export(
        header=bundle.header,
        scores=scores_from_results(episode_results(bundle.episodes)),
        source=bundle_source(bundle.header),
        model=model,
        retrieved=bundle_time(bundle.header, bundle.episodes),
        details=details(bundle.header, bundle.episodes),
    )
    written = write_eee(export, Path(args.out))
    for name, path in written.paths.items():
        print(f"{path}  {written.sizes[name]:,} bytes")
    return 0


def _format_table(title: str, table: LevelTable) -> list[str]:
    lines = [f"{title:<12}" + "".join(f"{metric_label(m):>8}" for m in METRICS)]
    for track in TRACKS:
        row = table.get(track)
        cells = "".join(f"{row[m]:>8.3f}" for m in METRICS) if row else f"{'no episodes':>16}"
        lines.append(f"  {track_label(track):<10}{cells}")
    return lines


def _format_behaviour(title: str, table: BehaviourTable) -> list[str]:
    columns = ("CONFUSION", "BAD RESP", "COLLISION", "CONFUSED")
    lines = [f"{title:<12}" + "".join(f"{c:>11}" for c in columns)]
    for track in TRACKS:
        cell = table.get(track)
        if cell is None:
            lines.append(f"  {track_label(track):<10}{'no episodes':>16}")
            continue
        values = (cell["confusion_rate"], cell["bad_response_rate"], cell["collision_rate"])
        rates = "".join(f"{'-':>11}" if v is None else f"{v:>11.3f}" for v in values)
        confused = f"{cell['mirror_confused_episodes']}/{cell['episodes']}"
        lines.append(f"  {track_label(track):<10}{rates}{confused:>11}")
    return lines


def cmd_score(args: argparse.Namespace) -> int:
    bundle = read_bundle(Path(args.bundle))
    # Only a bundle that verifies has scores: a crafted one (a duplicated episode, a step that
    # disagrees with the replay) would otherwise be scored as it claims, or end in a traceback.
    if not _bundle_verifies(bundle, args.bundle, "score", "nothing was scored"):
        return 1
    results = episode_results(bundle.episodes)
    scores = score_json(results)
    behaviour = behaviour_json(bundle.episodes)
    stability = cognitive_stability(results)
    errors = error_counts(bundle.episodes)
    # What the model wrote, measured by the lexicon rules (evaluation.process_metrics).
    process = process_json(bundle.episodes)
    spread = repeat_spread(results)
    # A control condition's scores say so; the paper's protocol's are what they always were.
    condition = bundle.header.get("condition", MAIN_CONDITION)
    control = {"condition": condition} if condition != MAIN_CONDITION else {}
    if args.json:
        document = {
            **scores,
            "behaviour": behaviour,
            "cognitive_stability": stability,
            "errors": errors.as_dict(),
            "process": process,
            **({"repeats": spread.as_dict()} if spread is not None else {}),
            **control,
        }
        json.dump(document, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    lines: list[str] = []
    if control:
        lines += [
            f"Condition: {condition} ({CONDITION_SUMMARIES[condition]}): a control, not the "
            "paper's protocol",
            "",
        ]
    for level, table in scores["levels"].items():
        lines += [*_format_table(level_label(level), table), ""]
    lines += [*_format_table("Overall", scores["overall"]), ""]
    lines += [
        "Behaviour: CONFUSION = executed moves towards the mark's mirror image and away from",
        "the mark / executed moves; BAD RESP = unreadable answers / steps; COLLISION = refused",
        "moves / answered steps; CONFUSED = episodes dominated by mirror confusion / episodes.",
        "",
    ]
    for level, behaviour_table in behaviour["levels"].items():
        lines += [*_format_behaviour(level_label(level), behaviour_table), ""]
    lines += [*_format_behaviour("Overall", behaviour["overall"]), ""]
    lines.append(
        "Cognitive stability: "
        + (
            "n/a (no scene has a completed episode at every level)"
            if stability is None
            else f"{stability:.3f} (from -3 to 3)"
        )
    )
    lines += ["", *_format_errors(errors)]
    lines += ["", *_format_process(process)]
    if spread is not None:
        lines += ["", *_format_spread(spread)]
    print("\n".join(lines))
    return 0


def _format_spread(spread: RepeatSpread) -> list[str]:
    """The score's lines on repeats: the overall AVG's spread and the flip rate."""
    flips = (
        f"{spread.flipped} of {spread.paired} episodes ({spread.flip_rate:.1%})"
        if spread.flip_rate is not None
        else "n/a"
    )
    return [
        f"Repeats: {spread.repeats} (the tables above pool their episodes; the intervals on the "
        "site add the repeats' variance to the scenes')",
        f"  Overall AVG of one repeat: {spread.low[AVG]:.3f} to {spread.high[AVG]:.3f} "
        f"(sd {spread.sd[AVG]:.3f})",
        f"  Flipped (success differs between repeats): {flips}",
    ]


def _format_process(process: dict[str, Any]) -> list[str]:
    """The score's lines on what the model wrote (``evaluation.process_metrics``)."""

    def percent(share: float | None) -> str:
        return "n/a" if share is None else f"{100 * share:.1f}%"

    pooled, overall = process[ATTRIBUTION]["overall"], process["overall"]["overall"]
    return [
        f"Process metrics ({process['method']}: lexicon rules, a measurement, not ground truth):",
        f"  L2+L3 responses naming a mirror or reflection: {percent(pooled['mirror_share'])} "
        f"({pooled['mirror_mentions']} of {pooled['responses']}); saying it shows itself: "
        f"{percent(pooled['own_share'])} ({pooled['own_reflection']})",
        f"  Reasoning-action consistency: {percent(overall['consistency'])} of the "
        f"{overall['stated_direction']} steps whose reasoning states a direction",
    ]


def _format_errors(errors: ErrorCounts) -> list[str]:
    """The score's lines on errored episodes (left out of every score) and refused steps."""
    lines = [
        f"Errored episodes: {errors.errored} of {errors.episodes} ({errors.share:.1%}), left "
        "out of every score (the provider or the harness ended them, not the model; "
        "`mirrorbench run --resume` plays them again)"
    ]
    lines += [f"  {label}: {n}" for _, label, n in errors.categories()]
    refused = sum(errors.refused_steps.values())
    if refused:
        lines.append(
            f"Refused steps: {refused} (no answer from the provider: scored as bad responses, "
            "as the protocol counts an empty answer)"
        )
        lines += [f"  {label}: {n}" for _, label, n in errors.refusals()]
    return lines


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="mirrorbench",
        description="MirrorBench: mirror self-recognition for multimodal models "
        f"(benchmark {BENCHMARK_VERSION}).",
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"mirrorbench {tool_version()} (benchmark {BENCHMARK_VERSION})",
    )
    sub = parser.add_subparsers(
        dest="command", required=True, parser_class=_Parser, title="commands", metavar="COMMAND"
    )

    p = sub.add_parser("scenes", help="list the scene set")
    p.add_argument("--json", action="store_true", help="print a JSON list")
    p.set_defaults(func=cmd_scenes)

    p = sub.add_parser("render", help="render one frame of a scene")
    p.add_argument("--scene", required=True, help="scene id, e.g. male_0-mano_white-splash")
    p.add_argument("--out", required=True, help="output PNG file")
    p.add_argument("--size", type=_size, default=DEFAULT_SIZE, help="image side in pixels")
    p.add_argument(
        "--offset", type=_offset, default=(0, 0, 0), help="hand offset DX,DY,DZ in steps"
    )
    p.add_argument("--no-mirror", action="store_true", help="remove the mirror (control view)")
    p.add_argument(
        "--condition",
        type=_condition,
        default="main",
        help=f"{conditions_text()} (default: main, the paper's protocol)",
    )
    p.add_argument("--no-shadows", action="store_true", help="render without shadows")
    p.add_argument(
        "--renderer", help="mujoco or isaac (default: $MIRRORBENCH_RENDERER, else mujoco)"
    )
    p.set_defaults(func=cmd_render)

    p = sub.add_parser("export-usd", help="write scenes as OpenUSD stages with their textures")
    p.add_argument("--scene", help="scene id, e.g. male_0-mano_white-splash")
    p.add_argument("--all", action="store_true", help="every scene of the set")
    p.add_argument("--out", required=True, help="output directory (<scene id>.usd, textures/)")
    p.add_argument("--no-mirror", action="store_true", help="leave the mirror out")
    p.set_defaults(func=cmd_export_usd)

    p = sub.add_parser("renderers", help="list the rendering backends and whether they run here")
    p.add_argument("--json", action="store_true", help="print a JSON list")
    p.set_defaults(func=cmd_renderers)

    p = sub.add_parser("gallery", help="render every scene and write an index.html contact sheet")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--size", type=_size, default=512, help="image side in pixels")
    p.add_argument("--scenes", default="all", help="all, human, robot or comma-separated ids")
    p.set_defaults(func=cmd_gallery)

    p = sub.add_parser(
        "prompt",
        help="print the messages a model gets at a step (images as named placeholders)",
    )
    p.add_argument("--scene", required=True, help="scene id")
    p.add_argument("--level", required=True, type=_level, help="prompt level 0-3")
    p.add_argument("--size", type=_size, default=DEFAULT_SIZE, help="image side in pixels")
    p.add_argument(
        "--moves",
        default="",
        help="options 1-6 to play first, e.g. 6,6,3; prints the next step's messages "
        "(default: none, the first step)",
    )
    p.add_argument(
        "--condition",
        type=_condition,
        default="main",
        help=f"{conditions_text()} (default: main, the paper's protocol)",
    )
    p.set_defaults(func=cmd_prompt)

    p = sub.add_parser(
        "replay-html",
        help="write one episode of a bundle as a self-contained HTML replay (frames inlined)",
    )
    p.add_argument("bundle")
    p.add_argument(
        "--episode",
        required=True,
        type=_episode_ref,
        help="SCENE:LEVEL, e.g. male_0-mano_white-splash:3",
    )
    p.add_argument("--out", required=True, help="the HTML file to write")
    p.set_defaults(func=cmd_replay_html)

    p = sub.add_parser("run", help="evaluate an agent and write a results bundle")
    p.add_argument(
        "--config",
        metavar="FILE",
        help="a run file (TOML) with every option of the run; options given here replace the "
        "file's (docs/exports.md)",
    )
    p.add_argument(
        "--agent",
        help="random | oracle | mirror-confused | chest | scripted:FILE | openai:MODEL | "
        "anthropic:MODEL (required without --config)",
    )
    p.add_argument("--base-url", help="API base URL (OpenAI-compatible servers, proxies)")
    p.add_argument("--levels", type=_levels, help="e.g. 0,1 (default: all)")
    p.add_argument("--scenes", help="all, human, robot or comma-separated ids (default: all)")
    p.add_argument(
        "--condition",
        type=_condition,
        help=f"{conditions_text()} (default: main, the paper's protocol)",
    )
    p.add_argument(
        "--seed",
        type=int,
        help="the run's seed: the random agent's (never sent to a model API; default 0)",
    )
    p.add_argument(
        "--repeats",
        type=_positive("--repeats"),
        metavar="K",
        help="play every episode K times, asking afresh each time (no cached answers when K > 1; "
        "the random agent's seed is the run's + the repeat; default 1)",
    )
    p.add_argument(
        "--workers",
        type=_positive("--workers"),
        help="model requests in flight; a few more episodes stay open (default 1)",
    )
    p.add_argument(
        "--render-threads",
        type=_positive("--render-threads"),
        default=None,
        help="persistent renderers shared by all episodes (default: one per core)",
    )
    p.add_argument(
        "--image-history",
        type=_non_negative("--image-history"),
        help="previous images shown with the current one (default 1)",
    )
    p.add_argument(
        "--image-size", type=_size, help=f"frame side in pixels (default {DEFAULT_SIZE})"
    )
    p.add_argument(
        "--max-tokens",
        type=_positive("--max-tokens"),
        default=None,
        help="cap on each answer's output tokens (default: no cap; Anthropic, whose API needs "
        "one, gets the model's maximum output)",
    )
    p.add_argument("--out", help="bundle path (default: var/runs/<agent>.jsonl)")
    p.add_argument("--resume", action="store_true", help="keep and skip finished episodes")
    p.add_argument("--no-cache", action="store_true", help="do not use the response cache")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("verify", help="replay a bundle and check every recorded step and metric")
    p.add_argument("bundle")
    p.set_defaults(func=cmd_verify)

    p = sub.add_parser(
        "score",
        help="print the level tables, Table II, behaviour and cognitive stability of a bundle",
    )
    p.add_argument("bundle")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_score)

    p = sub.add_parser(
        "export-parquet",
        help="write a bundle's episodes and steps as parquet tables with a dataset card",
    )
    p.add_argument("bundle")
    p.add_argument(
        "--out", required=True, help="output directory (episodes.parquet, steps.parquet, README.md)"
    )
    p.set_defaults(func=cmd_export_parquet)

    p = sub.add_parser(
        "export-eee",
        help="write a bundle's results in the Every Eval Ever schema (aggregate and samples)",
    )
    p.add_argument("bundle")
    p.add_argument(
        "--out",
        required=True,
        help="output directory: the files go under DIR/data/mirrorbench/DEVELOPER/MODEL/",
    )
    p.add_argument(
        "--model-id",
        metavar="DEVELOPER/MODEL",
        help="the model's id (default: the header's provider/model, mirrorbench/AGENT for a "
        "baseline, local/AGENT otherwise)",
    )
    p.set_defaults(func=cmd_export_eee)

    p = sub.add_parser(
        "submit",
        help="upload a bundle to a MirrorBench site, which verifies it before storing anything",
    )
    p.add_argument("bundle")
    p.add_argument("--url", required=True, help="the site, e.g. https://mirrorbench.example")
    p.add_argument("--token", help="your API token (default: $MIRRORBENCH_TOKEN)")
    p.add_argument("--model", required=True, help="the leaderboard name of the model")
    p.add_argument(
        "--kind", choices=["proprietary", "open-weights", "human"], default="open-weights"
    )
    p.add_argument("--organisation", default="")
    p.add_argument("--params-b", type=float, default=None, help="parameters, in billions")
    p.add_argument("--link", default="", help="code, model card or paper")
    p.add_argument(
        "--reproduce",
        metavar="PROVIDER:MODEL",
        help="let the server re-run a sample of the episodes with this model "
        "(key from $MIRRORBENCH_REPRODUCE_API_KEY)",
    )
    p.add_argument("--reproduce-base-url", default="", help="the model's API base URL")
    p.set_defaults(func=cmd_submit)

    p = sub.add_parser(
        "import-inspect",
        help="turn a finished Inspect log of mirrorbench/mirror_test into a verified bundle",
    )
    p.add_argument("log", help="the Inspect log (.eval or .json)")
    p.add_argument("--out", required=True, help="the bundle to write (JSON Lines)")
    p.set_defaults(func=cmd_import_inspect)
    return parser


def _positive(name: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = 0
        if value < 1:
            raise argparse.ArgumentTypeError(f"{name} must be a positive integer, got {text!r}")
        return value

    return parse


def _non_negative(name: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = -1
        if value < 0:
            raise argparse.ArgumentTypeError(
                f"{name} must be 0 or a positive integer, got {text!r}"
            )
        return value

    return parse


def _join_negative_offsets(argv: list[str]) -> list[str]:
    """Let ``--offset -2,0,1`` through: argparse would take ``-2,0,1`` for an option."""
    joined: list[str] = []
    i = 0
    while i < len(argv):
        if argv[i] == "--offset" and i + 1 < len(argv):
            joined.append(f"--offset={argv[i + 1]}")
            i += 2
        else:
            joined.append(argv[i])
            i += 1
    return joined


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(
            _join_negative_offsets(list(sys.argv[1:] if argv is None else argv))
        )
        return int(args.func(args))
    except (UsageError, UnknownSceneError, BundleError, BackendError) as exc:
        print(f"mirrorbench: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except SystemExit as exc:  # --help and --version
        return exc.code if isinstance(exc.code, int) else 0


if __name__ == "__main__":
    sys.exit(main())
