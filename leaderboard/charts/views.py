"""The chart pages: /charts/, /compare/ and the charts of a model's page.

Each page validates its query (``ChartQueryForm``), reads through ``chart_selectors`` and
renders each chart's numbers as a table; ``static/js/charts.js`` fetches the figure from the
chart API (``chart_apis``) at the ``data-chart-url`` of each chart and draws it.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse

from evaluation.cost import FULL_RUN_EPISODES
from evaluation.vocabulary import (
    AVG,
    LEVELS,
    METRICS,
    OVERALL,
    PAPER_TABLES,
    TABLES,
    table_label,
)
from leaderboard.boards.selectors import tracks_page
from leaderboard.charts import figures
from leaderboard.charts.cost import cost_rows, cost_table
from leaderboard.charts.forms import ChartQueryForm
from leaderboard.charts.selectors import (
    MAX_MODELS,
    RANDOM_SLUG,
    ChartRun,
    best_model_slug,
    chart_models,
    chart_runs,
    chart_runs_for,
    cost_points,
    default_slugs,
    model_chart_version,
    runs_by_model,
    scene_level_episodes,
    scene_scores,
)
from leaderboard.exports import csv_response
from leaderboard.formatting import metric
from leaderboard.models import ModelEntry, Run
from simulation.versions import BENCHMARK_VERSION, RETIRED_VERSIONS


@dataclass
class ChartBlock:
    """One chart on a page: where its figure comes from and its numbers."""

    id: str
    title: str
    description: str
    url: str
    table: figures.ChartTable


def _api_url(name: str, query: Sequence[tuple[str, str]]) -> str:
    url = reverse(name)
    return f"{url}?{urlencode(list(query))}" if query else url


def _query(slugs: Sequence[str], version: str, baselines: bool = False) -> list[tuple[str, str]]:
    query = [("m", slug) for slug in slugs]
    if version != BENCHMARK_VERSION:
        query.append(("version", version))
    if baselines:
        query.append(("baselines", "show"))
    return query


def _bad_request(request: HttpRequest, form: ChartQueryForm) -> HttpResponse:
    return render(
        request, "leaderboard/chart_bad_request.html", {"errors": form.errors.items()}, status=400
    )


def _version_context(version: str) -> dict[str, Any]:
    return {
        "version": version,
        "current_version": BENCHMARK_VERSION,
        "versions": [BENCHMARK_VERSION, *RETIRED_VERSIONS],
        "retired_reason": RETIRED_VERSIONS.get(version),
    }


def level_blocks(
    picked: Sequence[ChartRun], slugs: Sequence[str], version: str, prefix: str = ""
) -> list[ChartBlock]:
    """Return the radar and trajectory charts of the models ``slugs`` (``picked`` their runs)."""
    query = _query(slugs, version)
    return [
        ChartBlock(
            id=f"{prefix}radar",
            title="The four metrics at each level",
            description="One radar per level over TSR, SIR, FCR and PCR (Overall column of the "
            "level tables), on a common scale; the further out, the better.",
            url=_api_url("api-chart-radar", query),
            table=figures.radar_table(picked),
        ),
        ChartBlock(
            id=f"{prefix}trajectories",
            title="Metric trajectories across levels (Fig. 3)",
            description="Each metric from level 0 (mirror disclosed, with a template) to level 3 "
            "(neither mirror nor body mentioned). A stable model declines as prior knowledge is "
            "removed.",
            url=_api_url("api-chart-trajectories", query),
            table=figures.trajectories_table(picked),
        ),
    ]


def charts_page(request: HttpRequest) -> HttpResponse:
    form = ChartQueryForm(request.GET)
    if not form.is_valid():
        return _bad_request(request, form)
    version, baselines = form.chosen_version, form.show_baselines
    runs = chart_runs(version=version, baselines=baselines)
    slugs = form.chosen_slugs or default_slugs(runs)
    # Models picked by name are drawn whatever they are (the Oracle too), as on /compare/.
    chosen = runs_by_model(chart_runs(version=version, slugs=slugs) if form.chosen_slugs else runs)
    picked = [chosen[slug] for slug in slugs if slug in chosen]
    version_query = _query([], version, baselines)
    tracks = tracks_page(version=version)
    blocks = [
        ChartBlock(
            id="stability",
            title="Cognitive stability against task performance (Fig. 2)",
            description="One bubble per model: overall AVG across, cognitive stability up. Open-"
            "weights bubbles grow with the parameter count; proprietary models and baselines "
            "have a fixed size. Dashed lines: CS 0 (no trend across levels) and the random "
            "policy's AVG.",
            url=_api_url("api-chart-stability", version_query),
            table=figures.stability_table(runs),
        ),
        ChartBlock(
            id="stability-ranking",
            title="Cognitive stability ranking (Fig. 5)",
            description="Each model's cognitive stability with its 95% bootstrap interval over "
            "scenes (1000 resamples); the dashed line is the random policy.",
            url=_api_url("api-chart-stability-ranking", version_query),
            table=figures.stability_ranking_table(runs),
        ),
        *level_blocks(picked, slugs, version),
        _tracks_block(tracks, version_query),
        cost_block(runs, version_query),
    ]
    slots = [*slugs, *[""] * (MAX_MODELS - len(slugs))]
    context = {
        "form": form,
        "blocks": blocks,
        "models": chart_models(version=version),
        "slots": slots,
        "picked": picked,
        "compare_url": _api_url("leaderboard:compare", _query(slugs, version))
        if len(slugs) >= 2
        else "",
        "baselines": baselines,
        "cost_csv_url": _api_url("leaderboard:charts-cost-csv", version_query),
        **_version_context(version),
    }
    return render(request, "leaderboard/charts.html", context)


def cost_block(runs: Sequence[ChartRun], query: Sequence[tuple[str, str]]) -> ChartBlock:
    """The cost-performance chart's block on /charts/."""
    return ChartBlock(
        id="cost",
        title="Cost against performance",
        description=f"One marker per run with a price: overall AVG up, what its measured tokens "
        f"cost per {FULL_RUN_EPISODES} episodes across. The dashed line is the Pareto front: "
        "the runs no other beats on both. Runs without a price are in the table as "
        f"\u201cno price\u201d.",
        url=_api_url("api-chart-cost", query),
        table=cost_table(cost_points(runs=runs)),
    )


def cost_csv(request: HttpRequest) -> HttpResponse:
    """The cost chart's numbers as CSV, for the board's version and baselines switch."""
    form = ChartQueryForm(request.GET)
    if not form.is_valid():
        return _bad_request(request, form)
    runs = chart_runs(version=form.chosen_version, baselines=form.show_baselines)
    header = [
        "model",
        "kind",
        "overall_avg",
        f"cost_per_{FULL_RUN_EPISODES}_usd",
        "input_tokens",
        "output_tokens",
        "cached_input_tokens",
        "price_source",
        "pareto_front",
    ]
    rows = cost_rows(cost_points(runs=runs))
    return csv_response(f"mirrorbench-cost-{form.chosen_version}.csv", header, rows)


def _tracks_block(page: Any, query: Sequence[tuple[str, str]]) -> ChartBlock:
    return ChartBlock(
        id="tracks",
        title="Human and robot tracks by level (Table III)",
        description="The mean AVG of the multimodal models (baselines and the human reference "
        "excluded) at each level, by track.",
        url=_api_url("api-chart-tracks", query),
        table=figures.tracks_table(page.table_iii, page.models),
    )


def tracks_chart(*, page: Any, request: HttpRequest) -> ChartBlock:
    """Return the Table III chart of the tracks page, with the page's own filters."""
    query = [(k, v) for k in ("source", "version") for v in request.GET.getlist(k) if v]
    return _tracks_block(page, query)


def compare_page(request: HttpRequest) -> HttpResponse:
    form = ChartQueryForm(request.GET, min_models=2)
    if not form.is_valid():
        return _bad_request(request, form)
    version = form.chosen_version
    picked = chart_runs_for(version=version, slugs=form.chosen_slugs)
    context = {
        "picked": picked,
        "level_tables": compare_tables(picked),
        "blocks": level_blocks(picked, form.chosen_slugs, version),
        "win_loss": win_loss(picked),
        "without_scenes": [run.model for run in picked if run.source == Run.Source.REPORTED],
        "metrics": METRICS,
        "charts_url": _api_url("leaderboard:charts", _query(form.chosen_slugs, version)),
        **_version_context(version),
    }
    return render(request, "leaderboard/compare.html", context)


def compare_tables(picked: Sequence[ChartRun]) -> list[dict[str, Any]]:
    """Return the level tables side by side: one table per level (and overall), one row per
    model, the Overall column's metrics with the Human and Robot AVG."""
    tables = []
    for table in TABLES:
        rows = []
        for run in picked:
            cells = run.tables.get(table, {})
            overall = cells.get(OVERALL)
            rows.append(
                {
                    "model": run.model,
                    "slug": run.slug,
                    "source": run.source,
                    "values": [metric(overall[m]) if overall else "" for m in METRICS],
                    "human": metric((cells.get("human") or {}).get(AVG)),
                    "robot": metric((cells.get("robot") or {}).get(AVG)),
                }
            )
        title = f"Overall ({PAPER_TABLES[OVERALL]})" if table == OVERALL else table_label(table)
        tables.append({"table": table, "title": title, "rows": rows})
    return tables


def win_loss(picked: Sequence[ChartRun]) -> list[dict[str, Any]]:
    """Return, for each pair of models with per-scene results, on how many scenes each has the
    higher mean AVG over the four levels (scenes both have at every level)."""
    with_scenes = [run for run in picked if run.source != Run.Source.REPORTED]
    if len(with_scenes) < 2:
        return []
    run_ids = [run.run_id for run in with_scenes]
    scores = scene_scores(run_ids=run_ids)
    episodes = scene_level_episodes(run_ids=run_ids)
    pairs = []
    for a, b in itertools.combinations(with_scenes, 2):
        left, right = scores.get(a.run_id, {}), scores.get(b.run_id, {})
        shared = sorted(set(left) & set(right))
        # Means of the same four-level sums: equal within rounding is a tie.
        wins = sum(left[s] - right[s] > 1e-9 for s in shared)
        losses = sum(right[s] - left[s] > 1e-9 for s in shared)
        pairs.append(
            {
                "a": a.model,
                "b": b.model,
                "wins": wins,
                "ties": len(shared) - wins - losses,
                "losses": losses,
                "scenes": len(shared),
                "by_scene": [
                    {
                        "scene": scene,
                        "a_avg": left[scene],
                        "b_avg": right[scene],
                        "result": _scene_result(left[scene] - right[scene]),
                        "levels": _side_by_side_links(
                            episodes.get(a.run_id, {}), episodes.get(b.run_id, {}), scene
                        ),
                    }
                    for scene in shared
                ],
            }
        )
    return pairs


def _scene_result(margin: float) -> str:
    return "win" if margin > 1e-9 else "loss" if margin < -1e-9 else "tie"


def _side_by_side_links(
    a: dict[tuple[str, int], int], b: dict[tuple[str, int], int], scene: str
) -> list[tuple[int, str]]:
    """Return (level, address) of the side-by-side view of a scene's episodes at each level."""
    links = []
    for level in LEVELS:
        if (scene, level) in a and (scene, level) in b:
            query = urlencode({"a": a[(scene, level)], "b": b[(scene, level)]})
            links.append((level, f"{reverse('leaderboard:episode-compare')}?{query}"))
    return links


def model_charts_context(*, entry: ModelEntry) -> dict[str, Any]:
    """Return what ``_model_charts.html`` needs: the model's radar and trajectories beside the
    random baseline and the best model of its benchmark version (empty when it has none)."""
    version = model_chart_version(entry=entry)
    if version is None:
        return {"model_charts": None}
    best = best_model_slug(version=version)
    slugs = list(dict.fromkeys(s for s in (entry.slug, RANDOM_SLUG, best) if s))
    picked = chart_runs_for(version=version, slugs=slugs)
    slugs = [run.slug for run in picked]
    if not any(run.slug == entry.slug and run.has_levels for run in picked):
        return {"model_charts": None}
    return {
        "model_charts": {
            "version": version,
            "others": [run.model for run in picked if run.slug != entry.slug],
            "blocks": level_blocks(picked, slugs, version, prefix="model-"),
            "charts_url": _api_url("leaderboard:charts", _query(slugs, version)),
        }
    }
