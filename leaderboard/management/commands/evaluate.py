"""``python manage.py evaluate --agent SPEC``: queue a run on the workers, optionally follow it."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from evaluation.config import RunConfig
from evaluation.metrics import score_json
from evaluation.progress import RunProgress
from evaluation.registry import agent_label, parse_agent_spec
from evaluation.vocabulary import LEVEL_KEYS, parse_levels
from leaderboard.boards.entries import model_entry_upsert
from leaderboard.models import ModelEntry, Run
from leaderboard.runs.selectors import run_progress, run_results
from leaderboard.runs.services import run_create

FINAL = (Run.Status.COMPLETED, Run.Status.FAILED, Run.Status.CANCELLED)


def _levels(text: str) -> tuple[int, ...]:
    try:
        return parse_levels(text)
    except ValueError as exc:
        raise ValueError(f"--levels {exc}") from None


def model_for_agent(agent: str, name: str | None, kind: str | None) -> ModelEntry:
    """Return the model entry a run of ``agent`` belongs to (baselines have fixed names).

    Raises AgentSpecError (a ValueError) if ``agent`` names no agent.
    """
    name = name or agent_label(agent)
    existing = ModelEntry.objects.filter(name=name).first()
    if existing is not None and kind is None:
        return existing
    default_kind = (
        ModelEntry.Kind.PROPRIETARY
        if parse_agent_spec(agent).is_model
        else ModelEntry.Kind.BASELINE
    )
    return model_entry_upsert(name=name, kind=kind or default_kind)


class Command(BaseCommand):
    help = "Queue an evaluation run on the Celery workers (start them with `make worker`)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--agent", required=True, help="as in `mirrorbench run`")
        parser.add_argument("--base-url", default=None)
        parser.add_argument("--levels", default=",".join(LEVEL_KEYS))
        parser.add_argument("--scenes", default="all")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument(
            "--repeats", type=int, default=1, help="play every episode K times (seeds seed + r)"
        )
        parser.add_argument("--image-size", type=int, default=1024)
        parser.add_argument("--image-history", type=int, default=1)
        parser.add_argument("--model", default=None, help="model entry name (default from --agent)")
        parser.add_argument("--kind", choices=ModelEntry.Kind.values, default=None)
        parser.add_argument("--private", action="store_true", help="keep the run off public pages")
        parser.add_argument("--wait", action="store_true", help="follow the run to its end")
        parser.add_argument("--json", action="store_true", help="end with one JSON object")
        parser.add_argument(
            "--timeout", type=float, default=None, help="give up waiting after S seconds"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            config = RunConfig(
                agent=options["agent"],
                levels=_levels(options["levels"]),
                scenes=options["scenes"],
                base_url=options["base_url"],
                seed=options["seed"],
                image_size=options["image_size"],
                image_history=options["image_history"],
                repeats=options["repeats"],
            )
            entry = model_for_agent(options["agent"], options["model"], options["kind"])
            visibility = Run.Visibility.PRIVATE if options["private"] else Run.Visibility.PUBLIC
            run = run_create(model_entry=entry, config=config, visibility=visibility)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.stderr.write(f"Queued run {run.pk} of {entry.name}: {run.episodes_expected} episodes")
        if options["wait"]:
            run = self._follow(run, options["timeout"])
        if options["json"]:
            run.refresh_from_db()
            result = {
                "run": run.pk,
                "status": run.status,
                "episodes": run.episodes_expected,
                "metrics": score_json(run_results(run=run)),
            }
            self.stdout.write(json.dumps(result))

    def _follow(self, run: Run, timeout: float | None) -> Run:
        """Show the run's progress (a tqdm bar on stderr) until it ends or ``timeout`` passes."""
        started = time.monotonic()
        with RunProgress(run.episodes_expected, sys.stderr, desc=f"run {run.pk}") as bar:
            while True:
                run.refresh_from_db()
                p = run_progress(run=run)
                bar.set(
                    done=p["episodes_done"],
                    steps=p["steps"],
                    bad=p["bad"],
                    errors=p["episodes_error"],
                )
                if run.status in FINAL:
                    return run
                if timeout is not None and time.monotonic() - started > timeout:
                    raise CommandError(f"run {run.pk} still {run.status} after {timeout:.0f} s")
                time.sleep(0.5)
