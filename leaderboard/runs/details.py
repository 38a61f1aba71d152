"""Reads: a run's per-episode details as parquet, in a zip with their dataset card.

The tables are ``evaluation.details``'s, from the same records as the run's bundle, plus what
only the site knows: each episode's replay page, its cost where a price is configured, and the
address of the frame each step showed (the frame the replay serves, under today's renderer).
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from io import BytesIO
from typing import Any

from django.urls import reverse

from evaluation.details import (
    CARD_FILE,
    EPISODES_FILE,
    STEPS_FILE,
    Details,
    EpisodeExtras,
    details,
    parquet_bytes,
)
from leaderboard.frames.selectors import run_image_size
from leaderboard.models import Run
from leaderboard.runs.selectors import finished_episodes, header_for, run_header, tokens_cost
from simulation.backends import renderer_version
from simulation.dynamics import Vec3
from simulation.renderer import frame_key

ZIP_DATE = (2026, 1, 1, 0, 0, 0)
"""Every member's time in the zip: the same run gives the same bytes (a cache may keep them)."""


def run_details_zip(*, run: Run, user: Any, absolute: Callable[[str], str]) -> bytes:
    """Return ``episodes.parquet``, ``steps.parquet`` and ``README.md`` of ``run``, zipped.

    Args:
        run: A run the user may see (``runs.selectors.run_for``), with episodes.
        user: Who asks: the header's endpoint is shown as they may see it.
        absolute: Turns a site path into the address the files name (the request's
            ``build_absolute_uri``).
    """
    tables = run_details(run=run, header=run_header_for(run=run, user=user), absolute=absolute)
    buffer = BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as archive:
        for name, data in (
            (EPISODES_FILE, parquet_bytes(tables.episodes)),
            (STEPS_FILE, parquet_bytes(tables.steps)),
            (CARD_FILE, tables.card.encode()),
        ):
            member = zipfile.ZipInfo(name, date_time=ZIP_DATE)
            member.external_attr = 0o644 << 16  # rw-r--r-- once unzipped
            archive.writestr(member, data)
    return buffer.getvalue()


DETAILS_TABLES = ("episodes", "steps")
"""The tables of a run's details, each also served alone as parquet."""


def run_details_table(*, run: Run, user: Any, absolute: Callable[[str], str], table: str) -> bytes:
    """Return one table of ``run``'s details (``episodes`` or ``steps``) as parquet: the same
    bytes as that file of ``run_details_zip``."""
    if table not in DETAILS_TABLES:
        raise ValueError(f"table: expected one of {', '.join(DETAILS_TABLES)}, got {table!r}")
    tables = run_details(run=run, header=run_header_for(run=run, user=user), absolute=absolute)
    return parquet_bytes(tables.episodes if table == "episodes" else tables.steps)


def run_header_for(*, run: Run, user: Any) -> dict[str, Any]:
    """Return ``run``'s bundle header with its endpoint as ``user`` may see it."""
    return header_for(run_header(run=run), run=run, user=user)


def run_details(*, run: Run, header: dict[str, Any], absolute: Callable[[str], str]) -> Details:
    """Return the details of ``run`` (``evaluation.details.details``) with what only the site
    knows: each episode's replay page and cost, and each step's frame address.

    Args:
        run: A run the user may see, with episodes.
        header: Its bundle header as the user may see it (``run_header_for``).
        absolute: Turns a site path into the address the tables name.
    """
    size = run_image_size(run)
    version = renderer_version()
    records: list[dict[str, Any]] = []
    extras: list[EpisodeExtras] = []
    for episode in finished_episodes(run):
        steps = list(episode.steps.all())
        records.append(episode.as_record([s.as_record() for s in steps]))
        cells: list[Vec3] = [(0, 0, 0)]
        cells += [(s.hand_cell[0], s.hand_cell[1], s.hand_cell[2]) for s in steps]
        frame_urls: list[str | None] = [
            absolute(
                reverse(
                    "leaderboard:frame",
                    kwargs={
                        "key": frame_key(
                            version,
                            episode.scene.scene_id,
                            cell,
                            size,
                            condition=run.condition,
                        ),
                        "variant": "png",
                    },
                )
            )
            # Step i answered the view of the cell before it.
            for cell in cells[: len(steps)]
        ]
        answered = [s for s in steps if not s.cached]
        cost = tokens_cost(
            run,
            sum(s.input_tokens or 0 for s in answered),
            sum(s.output_tokens or 0 for s in answered),
        )
        extras.append(
            EpisodeExtras(
                url=absolute(reverse("leaderboard:episode", args=[episode.pk])),
                cost_usd=cost,
                frame_urls=frame_urls,
            )
        )
    return details(
        header,
        records,
        run_id=run.pk,
        model=run.model_entry.name,
        run_url=absolute(reverse("leaderboard:run", args=[run.pk])),
        extras=extras,
    )
