"""The chart figures built as plain dicts are valid plotly figures, equal to plotly's own.

``leaderboard.charts.figures`` and ``leaderboard.charts.cost`` build each figure's JSON without
plotly's graph objects (whose validation took about 30 ms a figure). Two checks keep what that
validation gave:

- plotly validates every figure the builders make (``go.Figure(data=..., layout=...)`` raises on
  a misspelt or invalid property; its layout changes for phones too, ``go.Layout(narrow)``), and
  reads it back unchanged (``to_plotly_json`` normalises nothing);
- the figure is equal, key for key and value for value, numeric types included, after a JSON
  round trip, to the one the old code built with plotly (``chart_reference``): the same traces,
  the same layout, make_subplots' domains, anchors and panel titles.

The inputs cover each builder's branches: no run, one run of each kind, many runs (past the
labelled bubbles), missing values, the human reference, the random baseline or none, models
without level tables, names with markup, integer and numpy numbers, and the paper's rows from
the database.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
import plotly.subplots as subplots
import pytest

from evaluation.vocabulary import LEVEL_KEYS
from leaderboard.boards.costs import RunCost
from leaderboard.boards.selectors import tracks_page
from leaderboard.charts import cost, figures
from leaderboard.charts.selectors import (
    RANDOM_SLUG,
    ChartRun,
    CostPoint,
    chart_runs,
    chart_runs_for,
    cost_points,
    default_slugs,
)
from leaderboard.runs.imports import reference_results_load
from mirrorbench_site.static import PLOTLY_JS, plotly_bundle
from tests.leaderboard import chart_reference as reference

METRICS = ("tsr", "sir", "fcr", "pcr", "avg")
KINDS = ("proprietary", "open-weights", "baseline", "human")
Builder = Callable[[Any], figures.Chart]
Reference = Callable[[Any], tuple[dict[str, Any], dict[str, Any]]]


def plain(value: Any) -> Any:
    """What a client gets: the JSON the API sends, read back."""
    return json.loads(json.dumps(value, sort_keys=True))


def differences(new: Any, old: Any, path: str = "") -> list[str]:
    """Where ``new`` and ``old`` differ, type included (1 is not 1.0, True is not 1)."""
    if type(new) is not type(old):
        return [f"{path}: {new!r} ({type(new).__name__}) != {old!r} ({type(old).__name__})"]
    if isinstance(new, dict):
        found = [f"{path}.{key}: only in one" for key in set(new) ^ set(old)]
        for key in sorted(set(new) & set(old)):
            found += differences(new[key], old[key], f"{path}.{key}")
        return found
    if isinstance(new, list):
        if len(new) != len(old):
            return [f"{path}: {len(new)} items != {len(old)}"]
        return [
            d
            for i, (a, b) in enumerate(zip(new, old, strict=True))
            for d in differences(a, b, f"{path}[{i}]")
        ]
    if new != new and old != old:  # NaN
        return []
    return [] if new == old else [f"{path}: {new!r} != {old!r}"]


def rounded(value: Any) -> Any:
    """``value`` with its floats to 9 decimals: the phones' stacked trajectories end a domain
    at float error below 0 (-5.6e-17), which plotly.js takes and plotly's validation refuses."""
    if isinstance(value, dict):
        return {key: rounded(item) for key, item in value.items()}
    if isinstance(value, list):
        return [rounded(item) for item in value]
    return round(value, 9) if isinstance(value, float) else value


BUNDLED_TRACES = plotly_bundle(PLOTLY_JS.read_text())[1]
"""The trace types the pages' plotly.js can draw (static/vendor/plotly.min.js)."""


def check(chart: figures.Chart, old: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """The new chart is a valid plotly figure, read back unchanged, equal to the old one, and
    the site's plotly.js bundle draws each of its traces."""
    figure, narrow = chart.figure, chart.narrow
    assert set(figure) == {"data", "layout"}
    assert {trace["type"] for trace in figure["data"]} <= set(BUNDLED_TRACES)
    validated = go.Figure(data=figure["data"], layout=figure["layout"])  # raises when invalid
    go.Layout(rounded(narrow))  # the layout changes for phones are valid plotly too
    read_back = validated.to_plotly_json()
    read_back["layout"].pop("template", None)
    assert differences(plain(figure), plain(read_back)) == []
    old_figure, old_narrow = old
    assert differences(plain(figure), plain(old_figure)) == []
    assert differences(plain(narrow), plain(old_narrow)) == []
    json.dumps(figures.chart_json(chart), allow_nan=False)


def test_a_misspelt_property_is_refused_by_the_check():
    chart = figures.stability_figure([run(1, "A", "proprietary", cs=0.5)])
    chart.figure["data"][0]["marker"]["colour"] = "#000000"
    with pytest.raises(ValueError, match="colour"):
        check(chart, reference.stability_figure([run(1, "A", "proprietary", cs=0.5)]))
    chart = figures.tracks_figure({}, 0)
    chart.figure["layout"]["xaxis"]["titel"] = {"text": "x"}
    with pytest.raises(ValueError, match="titel"):
        check(chart, reference.tracks_figure({}))


def test_a_trace_the_sites_plotly_js_cannot_draw_is_refused_by_the_check():
    chart = figures.stability_figure([run(1, "A", "proprietary", cs=0.5)])
    chart.figure["data"][0]["type"] = "scattergl"  # valid plotly, not in the bundle
    with pytest.raises(AssertionError):
        check(chart, reference.stability_figure([run(1, "A", "proprietary", cs=0.5)]))


# Inputs.


def tables(values: Mapping[str, float | None] | float | None, *, levels: bool = True) -> dict:
    """Level tables ("0" to "3", "overall") -> track -> metric; ``values`` gives each level's
    metrics (one number for all, or metric -> value), falling by 0.1 a level."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for i, level in enumerate(LEVEL_KEYS):
        if isinstance(values, Mapping):
            row = {m: v if v is None or not i else v - 0.1 * i for m, v in values.items()}
        else:
            row = {m: values if values is None or not i else values - 0.1 * i for m in METRICS}
        out[level] = {"overall": row, "human": dict(row), "robot": dict(row)}
    if not levels:
        out = {}
    if isinstance(values, Mapping):
        out["overall"] = {"overall": {m: v for m, v in values.items()}}
    else:
        out["overall"] = {"overall": {m: values for m in METRICS}}
    return out


def run(
    run_id: int,
    model: str,
    kind: str,
    *,
    cs: float | None = None,
    ci: Sequence[float] | bool | None = True,
    params_b: float | None = None,
    source: str = "evaluated",
    levels: bool = True,
    values: Mapping[str, float | None] | float | None = None,
    slug: str | None = None,
) -> ChartRun:
    """A chart run; by default its CS interval is (cs - 0.5, cs + 0.25) and its metrics fall
    from ``0.1 * run_id``."""
    if ci is True:
        ci = (cs - 0.5, cs + 0.25) if cs is not None else None
    return ChartRun(
        run_id=run_id,
        model=model,
        slug=slug if slug is not None else model.lower().replace(" ", "-"),
        kind=kind,
        params_b=params_b,
        source=source,
        cognitive_stability=cs,
        cognitive_stability_ci=ci,  # type: ignore[arg-type]
        tables=tables(0.1 * run_id if values is None else values, levels=levels),
    )


def many(count: int, seed: int) -> list[ChartRun]:
    """``count`` runs of every kind with random numbers, some without CS, levels or size."""
    rng = random.Random(seed)
    runs = []
    for i in range(count):
        kind = KINDS[i % len(KINDS)]
        cs = None if rng.random() < 0.15 else rng.uniform(-3, 3)
        runs.append(
            run(
                i + 1,
                f"Model {i:03d}",
                kind,
                cs=cs,
                ci=(cs - rng.random(), cs + rng.random()) if cs is not None else None,
                params_b=rng.choice([None, 0.5, 7, 8.0, 72.0, 405.0, rng.uniform(1, 700)]),
                source=rng.choice(["evaluated", "verified", "reported"]),
                levels=rng.random() > 0.1,
                values={m: rng.uniform(-1.2, 1) for m in METRICS},
                slug=RANDOM_SLUG if i == 7 else None,
            )
        )
    runs.sort(key=lambda r: -(r.overall_avg or 0))
    return runs


BOARD = [
    run(5, "Alpha", "proprietary", cs=1.5),
    run(4, "Beta", "open-weights", cs=0.5, params_b=72.0),
    run(3, "Gamma", "open-weights", cs=-0.25, params_b=8.0),
    run(2, "Random", "baseline", cs=0.05),
    run(1, "Paper", "proprietary", source="reported", levels=False),
]
RUNS: dict[str, list[ChartRun]] = {
    "none": [],
    "the board": BOARD,
    **{f"one {kind}": [run(3, f"One {kind}", kind, cs=0.75, params_b=7.0)] for kind in KINDS},
    "open weights of unknown size": [
        run(3, "Sized", "open-weights", cs=0.2, params_b=13.0),
        run(2, "Unsized", "open-weights", cs=0.1),
        run(1, "Zero", "open-weights", cs=0.3, params_b=0.0),
    ],
    "only unsized open weights": [run(2, "Unsized", "open-weights", cs=0.1)],
    "the human reference and a reported row": [
        run(9, "Human", "human", cs=2.0, ci=None),
        run(3, "Reported", "proprietary", source="reported", levels=False),
        run(2, "Random", "baseline", cs=-0.5, ci=None),
    ],
    "no stability, no levels": [
        run(2, "Reported", "proprietary", source="reported", levels=False),
        run(1, "Baseline", "baseline", levels=False),
    ],
    "the same model twice": [
        run(4, "Twice", "proprietary", cs=0.4, source="reported"),
        run(3, "Twice", "proprietary", cs=0.6),
    ],
    "ties and markup": [
        run(3, "<b>x</b> %{y}", "proprietary", cs=0.5),
        run(2, "A & {B}", "open-weights", cs=0.5, params_b=3.0),
        run(1, "Z", "baseline", cs=0.0, ci=(0.0, 0.0)),
    ],
    "integers": [
        run(3, "Ints", "open-weights", cs=1, ci=(0, 2), params_b=7, values=1),
        run(2, "Zero", "proprietary", cs=0, ci=(-1, 1), values=0),
    ],
    "numpy numbers": [
        run(
            3,
            "Numpy",
            "open-weights",
            cs=np.float64(0.25),
            ci=(np.float64(-0.5), np.float64(0.75)),
            params_b=np.float64(9.5),
            values=np.float64(0.6),
        ),
        run(2, "Random", "baseline", cs=np.float64(-0.125), slug=RANDOM_SLUG),
    ],
    "low scores (radial floor below -1)": [
        run(2, "Low", "proprietary", cs=-2.0, values=-1.3),
        run(1, "Lower", "baseline", cs=-3.0, values=-2.1),
    ],
    "six models (styles cycle)": [
        run(i, f"M{i}", KINDS[i % 3], cs=i / 7, params_b=float(i)) for i in range(1, 7)
    ],
    "many": many(40, seed=1),
    "many more": many(70, seed=2),
}
WITH_NONE = {
    "missing metric values": [
        run(
            3,
            "Holes",
            "proprietary",
            cs=0.2,
            values={"tsr": 0.5, "sir": None, "fcr": 0.25, "pcr": None, "avg": 0.3},
        ),
        run(2, "Whole", "open-weights", cs=0.1, params_b=2.0),
    ],
}
"""Inputs the radar cannot take (it needs every metric) but the other charts can."""

RUN_CHARTS: dict[str, tuple[Builder, Reference]] = {
    "stability": (figures.stability_figure, reference.stability_figure),
    "stability ranking": (figures.stability_ranking_figure, reference.stability_ranking_figure),
    "radar": (figures.radar_figure, reference.radar_figure),
    "trajectories": (figures.trajectories_figure, reference.trajectories_figure),
}


@pytest.mark.parametrize("chart", RUN_CHARTS)
@pytest.mark.parametrize("runs", RUNS)
def test_each_chart_of_runs_is_the_plotly_figure(chart, runs):
    build, old = RUN_CHARTS[chart]
    check(build(RUNS[runs]), old(RUNS[runs]))


@pytest.mark.parametrize("chart", ["stability", "stability ranking", "trajectories"])
def test_missing_metric_values_are_drawn_as_plotly_drew_them(chart):
    build, old = RUN_CHARTS[chart]
    runs = WITH_NONE["missing metric values"]
    check(build(runs), old(runs))


TABLE_III: dict[str, dict[str, float | None]] = {
    level: {"human": 0.1 * i, "robot": -0.05 * i, "overall": 0.025 * i}
    for i, level in enumerate((*LEVEL_KEYS, "avg"))
}
TRACK_TABLES: dict[str, dict[str, dict[str, float | None]]] = {
    "empty": {},
    "full": TABLE_III,
    "some rows, in another order": {"avg": TABLE_III["avg"], "2": TABLE_III["2"]},
    "missing tracks and values": {
        "0": {"human": 0.5, "robot": None},
        "1": {"overall": 1},
        "avg": {"human": 0, "robot": -0.25, "overall": None},
    },
}


@pytest.mark.parametrize("table", TRACK_TABLES)
def test_the_tracks_chart_is_the_plotly_figure(table):
    check(
        figures.tracks_figure(TRACK_TABLES[table], 3), reference.tracks_figure(TRACK_TABLES[table])
    )


def point(model: str, kind: str, avg: float | None, per_run: float | None) -> CostPoint:
    price = "" if per_run is None else "table"
    return CostPoint(
        model, model.lower(), kind, avg, RunCost(1000, 200, None, per_run, per_run, price)
    )


def random_points(count: int, seed: int) -> list[CostPoint]:
    rng = random.Random(seed)
    return [
        point(
            f"Run {i}",
            rng.choice([*KINDS, "other"]),
            None if rng.random() < 0.1 else rng.uniform(-0.5, 0.8),
            rng.choice([None, 0.0, rng.uniform(0, 40), rng.uniform(0, 40), rng.uniform(0, 40)]),
        )
        for i in range(count)
    ]


POINTS: dict[str, list[CostPoint]] = {
    "none": [],
    "unpriced": [point("A", "proprietary", 0.3, None), point("B", "open-weights", None, 1.0)],
    "one": [point("A", "proprietary", 0.3, 2.5)],
    "free": [point("A", "baseline", 0.1, 0.0), point("B", "open-weights", 0.2, 0.0)],
    "every kind and ties": [
        point("A", "proprietary", 0.3, 2.5),
        point("B", "open-weights", 0.3, 2.5),
        point("C", "baseline", 0.0, 0.0),
        point("D", "human", 0.9, 10),
        point("<i>E</i> %{x}", "open-weights", 0.1, 1),
        point("F", "unknown kind", 0.5, 3.0),
    ],
    "numpy": [point("N", "proprietary", np.float64(0.25), np.float64(1.5))],
    "many": random_points(60, seed=3),
}


@pytest.mark.parametrize("points", POINTS)
def test_the_cost_chart_is_the_plotly_figure(points):
    check(cost.cost_figure(POINTS[points]), reference.cost_figure(POINTS[points]))


# make_subplots' grid, for any number of panels.


@pytest.mark.parametrize("rows", [1, 2, 3, 5])
@pytest.mark.parametrize("cols", [1, 2, 4])
@pytest.mark.parametrize("spacing", [(0.12, 0.16), (0.03, 0.09), (0.0, 0.11), None])
def test_the_subplot_grid_is_make_subplots(rows, cols, spacing):
    """3 rows 0.09 apart and 5 rows 0.11 apart end the top row at 1.0000000000000002, which
    make_subplots rounds to 1.0."""
    horizontal, vertical = spacing or (0.2 / cols, 0.3 / rows)
    titles = [f"Panel {k}" if k % 3 else "" for k in range(rows * cols)]
    made = subplots.make_subplots(
        rows=rows,
        cols=cols,
        subplot_titles=titles,
        horizontal_spacing=horizontal,
        vertical_spacing=vertical,
    ).to_plotly_json()["layout"]
    domains = figures._subplot_grid(rows, cols, horizontal, vertical)
    assert len(domains) == rows * cols
    for k, (x_domain, y_domain) in enumerate(domains):
        axis = "" if k == 0 else str(k + 1)
        assert plain(made[f"xaxis{axis}"]) == {"anchor": f"y{axis}", "domain": x_domain}
        assert plain(made[f"yaxis{axis}"]) == {"anchor": f"x{axis}", "domain": y_domain}
        for new, old in zip(
            x_domain + y_domain,
            made[f"xaxis{axis}"]["domain"] + made[f"yaxis{axis}"]["domain"],
            strict=True,
        ):
            assert type(new) is type(old) and new == old
    assert (
        differences(
            plain(figures._subplot_titles(titles, domains)), plain(made.get("annotations", []))
        )
        == []
    )


# From the database: the paper's rows, as the chart API and the pages get them.


@pytest.mark.django_db
def test_the_charts_of_the_papers_rows_are_the_plotly_figures():
    reference_results_load()
    runs = chart_runs()
    assert len(runs) > 10
    for version in ("v2", "v3"):
        picked = chart_runs_for(version=version, slugs=default_slugs(chart_runs(version=version)))
        for build, old in RUN_CHARTS.values():
            check(build(chart_runs(version=version)), old(chart_runs(version=version)))
            check(build(picked), old(picked))
    page = tracks_page()
    check(
        figures.tracks_figure(page.table_iii, page.models), reference.tracks_figure(page.table_iii)
    )
    points = cost_points(runs=runs)
    check(cost.cost_figure(points), reference.cost_figure(points))
