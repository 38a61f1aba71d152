"""The paper's figures as plotly figures: plain functions from selector output to JSON.

Each chart has two builders: ``*_figure`` returns the plotly figure (``{"data", "layout"}``),
``*_table`` returns the same numbers as a table, the chart's text alternative (and, in ``note``,
what the chart leaves out and why). Pages render the tables; the chart API returns both
(``chart_json``) for ``static/js/charts.js`` to draw with the plotly.js that the Python package
ships.

The figures are built as the plain dicts plotly.js reads, not with plotly's graph objects, whose
validation of every property took about 30 ms a figure. The dicts are the ones plotly's Python
package made (``go.Figure(...).to_plotly_json()``, template left out), key for key:
``tests/leaderboard/test_chart_figures_equal.py`` validates every builder's output with plotly,
which refuses a misspelt property, and compares it with the figures built the old way
(``tests/leaderboard/chart_reference.py``).

Colours are the Okabe-Ito palette, safe for the common colour-vision deficiencies, and every
series also differs by marker symbol or line dash, so nothing is told by colour alone.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evaluation.vocabulary import (
    AVG,
    EPISODE_METRICS,
    LEVEL_KEYS,
    OVERALL,
    TRACKS,
    level_label,
    level_short,
    metric_label,
    track_label,
)
from leaderboard.charts.selectors import MLLM_KINDS, RANDOM_SLUG, ChartRun, runs_by_model
from leaderboard.formatting import KIND_LABELS, SOURCE_LABELS, metric, params
from leaderboard.models import ModelEntry

OKABE_ITO = {
    "orange": "#E69F00",
    "sky_blue": "#56B4E9",
    "bluish_green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "reddish_purple": "#CC79A7",
    "black": "#000000",
    "grey": "#999999",
}
"""Okabe and Ito's colour-blind-safe palette (grey added for reference marks)."""
KIND_STYLES = {
    ModelEntry.Kind.PROPRIETARY: (OKABE_ITO["blue"], "circle"),
    ModelEntry.Kind.OPEN_WEIGHTS: (OKABE_ITO["orange"], "square"),
    ModelEntry.Kind.BASELINE: (OKABE_ITO["black"], "diamond"),
    ModelEntry.Kind.HUMAN: (OKABE_ITO["bluish_green"], "star"),
}
"""Kind of model -> (colour, marker symbol)."""
SERIES_STYLES = [
    (OKABE_ITO["blue"], "circle", "solid"),
    (OKABE_ITO["vermillion"], "square", "dash"),
    (OKABE_ITO["bluish_green"], "diamond", "dot"),
    (OKABE_ITO["reddish_purple"], "triangle-up", "dashdot"),
]
"""The models of a radar or trajectory chart, in order -> (colour, marker, line dash)."""
TRACK_STYLES = {
    "human": (OKABE_ITO["blue"], ""),
    "robot": (OKABE_ITO["vermillion"], "/"),
    "overall": (OKABE_ITO["grey"], "."),
}
"""Track -> (bar colour, bar pattern)."""
RADAR_METRICS = EPISODE_METRICS
LEVEL_NAMES = {level: level_label(level) for level in LEVEL_KEYS}
FONT = {"family": "system-ui, -apple-system, Segoe UI, Roboto, sans-serif", "size": 13}
LABELLED_POINTS = 25
"""Up to this many bubbles carry their model's name on the chart (more would overlap)."""


@dataclass
class ChartTable:
    """A chart's numbers as a table: its text alternative. Cells are formatted text."""

    caption: str
    columns: list[str]
    rows: list[list[str]]
    note: str = ""
    """What the chart leaves out and why, in a sentence (empty when nothing)."""


@dataclass
class Chart:
    """What the chart API returns: the figure, the plotly.js config and the table."""

    figure: dict[str, Any]
    table: ChartTable
    filename: str
    narrow: dict[str, Any] = field(default_factory=dict)
    """Layout changes for a narrow screen (a phone): applied by charts.js under 600 px."""


def chart_json(chart: Chart) -> dict[str, Any]:
    """Return the chart as the API sends it."""
    return {
        "figure": chart.figure,
        "config": plot_config(chart.filename),
        "narrow": chart.narrow,
        "table": {
            "caption": chart.table.caption,
            "columns": chart.table.columns,
            "rows": chart.table.rows,
            "note": chart.table.note,
        },
    }


def plot_config(filename: str) -> dict[str, Any]:
    """Return the plotly.js config: the mode bar always shown, PNG download at twice the size
    (charts.js adds the SVG button), no plotly logo and no sharing to Plotly's cloud."""
    return {
        "displaylogo": False,
        "displayModeBar": True,
        "responsive": True,
        # Sharing uploads the chart to Plotly's cloud: the site must not send visitors there.
        "modeBarButtonsToRemove": ["select2d", "lasso2d", "autoScale2d", "sendChartToCloud"],
        "toImageButtonOptions": {"format": "png", "filename": filename, "scale": 2},
    }


def _layout(**extra: Any) -> dict[str, Any]:
    layout: dict[str, Any] = {
        "font": dict(FONT),
        "paper_bgcolor": "#ffffff",
        "plot_bgcolor": "#ffffff",
        "margin": {"l": 64, "r": 24, "t": 24, "b": 64},
        "legend": {"orientation": "h", "x": 0, "y": -0.18, "yanchor": "top"},
        "hoverlabel": {"font": dict(FONT)},
    }
    layout.update(extra)
    return layout


def _axis(title: str, **extra: Any) -> dict[str, Any]:
    return {
        "title": {"text": title},
        "gridcolor": "#e5e5e5",
        "zerolinecolor": "#bbbbbb",
        "linecolor": "#666666",
        "ticks": "outside",
        **extra,
    }


def _trace(kind: str, **properties: Any) -> dict[str, Any]:
    """Return a trace of type ``kind`` (``"scatter"``, ``"bar"``...) as plotly.js reads it."""
    return {**properties, "type": kind}


def _figure(data: list[dict[str, Any]], layout: dict[str, Any]) -> dict[str, Any]:
    """Return the figure as plotly.js reads it (no template: the layout is ours)."""
    return {"data": data, "layout": layout}


def _subplot_grid(
    rows: int, cols: int, horizontal_spacing: float, vertical_spacing: float
) -> list[tuple[list[float], list[float]]]:
    """Return the (x domain, y domain) of each panel of a ``rows`` x ``cols`` grid, row by row
    from the top left, as plotly's ``make_subplots`` computes them: the same arithmetic in the
    same order, so the same floats."""
    widths = [(1.0 - horizontal_spacing * (cols - 1)) / cols] * cols
    heights = [(1.0 - vertical_spacing * (rows - 1)) / rows] * rows
    domains = []
    for r in range(rows):
        below = rows - 1 - r  # make_subplots counts rows from the bottom
        y_start = sum(heights[:below]) + below * vertical_spacing
        for c in range(cols):
            x_start = sum(widths[:c]) + c * horizontal_spacing
            x_domain = [x_start, x_start + widths[c]]
            y_domain = [_into_paper(y_start), _into_paper(y_start + heights[-1 - r])]
            domains.append((x_domain, y_domain))
    return domains


def _into_paper(value: float) -> float:
    """A domain end as make_subplots rounds it: a float error above 1 (3 rows 0.09 apart end
    the top one at 1.0000000000000002) is 1. (No end falls below 0: the sums are positive.)"""
    return 1.0 if 1.0 < value < 1.01 else value


def _subplot_titles(
    titles: Sequence[str], domains: Sequence[tuple[Sequence[float], Sequence[float]]]
) -> list[dict[str, Any]]:
    """Return make_subplots' annotations for the panels' titles (an empty title has none)."""
    return [
        {
            "y": y_domain[1],
            "xref": "paper",
            "x": sum(x_domain) / 2.0,
            "yref": "paper",
            "text": title,
            "showarrow": False,
            "font": {"size": 16},
            "xanchor": "center",
            "yanchor": "bottom",
        }
        for title, (x_domain, y_domain) in zip(titles, domains, strict=False)
        if title
    ]


def _kind_label(kind: str) -> str:
    return KIND_LABELS.get(kind, kind).capitalize()


# Figure 2: cognitive stability against task performance.


def stability_runs(runs: Sequence[ChartRun]) -> list[ChartRun]:
    """Return the run of each model that has a cognitive stability (one per model), in rank
    order; the human reference is not a model and is left out."""
    chosen = runs_by_model(runs)
    return [
        run
        for run in runs
        if chosen.get(run.slug) is run
        and run.cognitive_stability is not None
        and run.overall_avg is not None
        and run.kind != ModelEntry.Kind.HUMAN
    ]


def _stability_note(runs: Sequence[ChartRun], shown: Sequence[ChartRun]) -> str:
    shown_slugs = {run.slug for run in shown}
    absent = {
        run.slug
        for run in runs
        if run.slug not in shown_slugs and run.kind != ModelEntry.Kind.HUMAN
    }
    if not absent:
        return ""
    count = f"{len(absent)} model{'s' if len(absent) != 1 else ''}"
    return (
        f"{count} of the leaderboard {'are' if len(absent) != 1 else 'is'} not on this chart: "
        "cognitive stability compares each scene's score across the four levels, and the "
        "paper reports only its tables, not per-scene results."
    )


def _quadrant_x(shown: Sequence[ChartRun]) -> float:
    """The vertical quadrant line: the random policy's AVG (the paper's threshold), else 0."""
    for run in shown:
        if run.slug == RANDOM_SLUG and run.overall_avg is not None:
            return run.overall_avg
    return 0.0


def stability_figure(runs: Sequence[ChartRun]) -> Chart:
    """Return Fig. 2: one bubble per model at (overall AVG, cognitive stability).

    Open-weights bubbles grow with the parameter count (area); proprietary models and
    baselines have a fixed size. Dashed lines split the plane at CS 0 (no trend across levels)
    and at the random policy's AVG when it is on the chart (else AVG 0).
    """
    shown = stability_runs(runs)
    data = []
    counts = [run.params_b for run in shown if run.params_b]
    sizeref = 2.0 * max(counts) / 46**2 if counts else 1.0
    labelled = len(shown) <= LABELLED_POINTS
    for kind in KIND_STYLES:
        group = [run for run in shown if run.kind == kind]
        if not group:
            continue
        colour, symbol = KIND_STYLES[kind]
        scaled = kind == ModelEntry.Kind.OPEN_WEIGHTS
        sizes = [run.params_b if scaled and run.params_b else None for run in group]
        marker: dict[str, Any] = {
            "color": colour,
            "symbol": symbol,
            "opacity": 0.8,
            "line": {"color": "#ffffff", "width": 1},
        }
        if scaled:
            # Area by parameter count; an open-weights model of unknown size gets the smallest.
            marker.update(
                size=[s or min(counts or [1.0]) for s in sizes],
                sizemode="area",
                sizeref=sizeref,
                sizemin=7,
            )
        else:
            marker["size"] = 16
        data.append(
            _trace(
                "scatter",
                name=_kind_label(kind),
                x=[run.overall_avg for run in group],
                y=[run.cognitive_stability for run in group],
                mode="markers+text" if labelled else "markers",
                text=[_escape(run.model) for run in group],
                textposition="top center",
                textfont={"size": 11},
                customdata=[[run.slug, params(run.params_b)] for run in group],
                hovertemplate="%{text}<br>AVG %{x:.3f}<br>CS %{y:.3f}<br>"
                "parameters %{customdata[1]}<extra></extra>",
                marker=marker,
            )
        )
    x0 = _quadrant_x(shown)
    line = {"color": OKABE_ITO["grey"], "width": 1, "dash": "dash"}
    figure = _figure(
        data,
        _layout(
            height=520,
            xaxis=_axis("Task performance (overall AVG)", zeroline=False),
            yaxis=_axis("Cognitive stability (CS)", zeroline=False),
            shapes=[
                {
                    "type": "line",
                    "xref": "x",
                    "yref": "paper",
                    "x0": x0,
                    "x1": x0,
                    "y0": 0,
                    "y1": 1,
                    "line": dict(line),
                },
                {
                    "type": "line",
                    "xref": "paper",
                    "yref": "y",
                    "x0": 0,
                    "x1": 1,
                    "y0": 0,
                    "y1": 0,
                    "line": dict(line),
                },
            ],
        ),
    )
    return Chart(figure, stability_table(runs), "mirrorbench-stability-vs-performance")


def stability_table(runs: Sequence[ChartRun]) -> ChartTable:
    """Return Fig. 2's numbers: the models on it, best AVG first."""
    shown = stability_runs(runs)
    rows = [
        [
            run.model,
            KIND_LABELS.get(run.kind, run.kind),
            params(run.params_b) if run.params_b else "",
            SOURCE_LABELS.get(run.source, run.source),
            metric(run.overall_avg),
            metric(run.cognitive_stability),
            _interval(run.cognitive_stability_ci),
        ]
        for run in shown
    ]
    return ChartTable(
        caption="Cognitive stability and overall AVG of each model",
        columns=["Model", "Kind", "Parameters", "Source", "Overall AVG", "CS", "CS 95% CI"],
        rows=rows,
        note=_stability_note(runs, shown),
    )


def _interval(ci: tuple[float, float] | None) -> str:
    return f"{metric(ci[0])} to {metric(ci[1])}" if ci else ""


# Figure 5: the cognitive stability ranking against the random policy.


def stability_ranking_figure(runs: Sequence[ChartRun]) -> Chart:
    """Return Fig. 5: each model's cognitive stability as a bar, highest on top, with its 95%
    bootstrap interval over scenes, and the random policy's value as a dashed line."""
    shown = sorted(stability_runs(runs), key=lambda r: (-(r.cognitive_stability or 0), r.model))
    order = [_escape(run.model) for run in reversed(shown)]
    data = []
    random_cs = next((r.cognitive_stability for r in shown if r.slug == RANDOM_SLUG), None)
    for kind in KIND_STYLES:
        group = [run for run in shown if run.kind == kind]
        if not group:
            continue
        colour, _ = KIND_STYLES[kind]
        values = [run.cognitive_stability or 0.0 for run in group]
        cis = [run.cognitive_stability_ci or (v, v) for run, v in zip(group, values, strict=True)]
        data.append(
            _trace(
                "bar",
                name=_kind_label(kind),
                orientation="h",
                x=values,
                y=[_escape(run.model) for run in group],
                marker={
                    "color": colour,
                    "pattern": {"shape": "x" if kind == ModelEntry.Kind.BASELINE else ""},
                },
                error_x={
                    "type": "data",
                    "symmetric": False,
                    "array": [hi - v for (_, hi), v in zip(cis, values, strict=True)],
                    "arrayminus": [v - lo for (lo, _), v in zip(cis, values, strict=True)],
                    "color": "#444444",
                    "thickness": 1.2,
                    "width": 3,
                },
                customdata=[[lo, hi] for lo, hi in cis],
                hovertemplate="%{y}<br>CS %{x:.3f}<br>95% CI %{customdata[0]:.3f} to "
                "%{customdata[1]:.3f}<extra></extra>",
            )
        )
    shapes = []
    if random_cs is not None:
        shapes.append(
            {
                "type": "line",
                "xref": "x",
                "yref": "paper",
                "x0": random_cs,
                "x1": random_cs,
                "y0": 0,
                "y1": 1,
                "line": {"color": OKABE_ITO["black"], "width": 1, "dash": "dash"},
            }
        )
    layout = _layout(
        height=max(260, 110 + 24 * len(shown)),
        barmode="overlay",
        margin={"l": 170, "r": 24, "t": 24, "b": 64},
        xaxis=_axis("Cognitive stability (CS), 95% bootstrap interval over scenes"),
        yaxis={"categoryorder": "array", "categoryarray": order, "automargin": True},
        legend={"orientation": "h", "x": 0, "y": 1.02, "yanchor": "bottom"},
    )
    if shapes:  # plotly left an empty list of shapes out
        layout["shapes"] = shapes
    return Chart(
        _figure(data, layout),
        stability_ranking_table(runs),
        "mirrorbench-stability-ranking",
        narrow={
            "margin": {"l": 110, "r": 12, "t": 96, "b": 64},
            "xaxis": {"title": {"text": "CS, 95% interval over scenes"}},
        },
    )


def stability_ranking_table(runs: Sequence[ChartRun]) -> ChartTable:
    """Return Fig. 5's numbers: the models by cognitive stability, highest first."""
    shown = sorted(stability_runs(runs), key=lambda r: (-(r.cognitive_stability or 0), r.model))
    rows = [
        [
            str(i),
            run.model,
            KIND_LABELS.get(run.kind, run.kind),
            metric(run.cognitive_stability),
            _interval(run.cognitive_stability_ci),
        ]
        for i, run in enumerate(shown, 1)
    ]
    return ChartTable(
        caption="Cognitive stability ranking, with 95% bootstrap intervals over scenes",
        columns=["#", "Model", "Kind", "CS", "95% CI"],
        rows=rows,
        note=_stability_note(runs, stability_runs(runs)),
    )


# Radar: the four metrics at each level.


def _level_note(runs: Sequence[ChartRun]) -> str:
    missing = [run.model for run in runs if not run.has_levels]
    if not missing:
        return ""
    names = ", ".join(missing)
    verb = "has" if len(missing) == 1 else "have"
    return f"{names} {verb} no level tables (the paper reports only an overall row), so no line."


def _radial_floor(values: Sequence[float]) -> float:
    low = min([*values, 0.0])
    return math.floor(low * 2) / 2


def radar_figure(runs: Sequence[ChartRun]) -> Chart:
    """Return one radar per level over TSR, SIR, FCR and PCR (Overall column), one closed line
    per model (up to four), on a common radial scale so the levels compare."""
    shown = [run for run in runs if run.has_levels]
    values = [
        run.tables[level][OVERALL][m]
        for run in shown
        for level in LEVEL_KEYS
        for m in RADAR_METRICS
    ]
    floor = _radial_floor(values)
    theta = [metric_label(m) for m in RADAR_METRICS]
    data = []
    for i, run in enumerate(shown):
        colour, symbol, dash = SERIES_STYLES[i % len(SERIES_STYLES)]
        for j, level in enumerate(LEVEL_KEYS):
            cell = run.tables[level][OVERALL]
            r = [cell[m] for m in RADAR_METRICS]
            data.append(
                _trace(
                    "scatterpolar",
                    name=_escape(run.model),
                    legendgroup=run.slug,
                    showlegend=j == 0,
                    subplot="polar" if j == 0 else f"polar{j + 1}",
                    r=[*r, r[0]],
                    theta=[*theta, theta[0]],
                    mode="lines+markers",
                    fill="toself",
                    fillcolor=_translucent(colour),
                    line={"color": colour, "dash": dash, "width": 2},
                    marker={"symbol": symbol, "size": 7, "color": colour},
                    hovertemplate=f"{_escape(run.model)}<br>{LEVEL_NAMES[level]}<br>"
                    "%{theta} %{r:.3f}<extra></extra>",
                )
            )
    domains = [
        ({"x": [0.0, 0.42], "y": [0.56, 0.98]}),
        ({"x": [0.58, 1.0], "y": [0.56, 0.98]}),
        ({"x": [0.0, 0.42], "y": [0.0, 0.42]}),
        ({"x": [0.58, 1.0], "y": [0.0, 0.42]}),
    ]
    narrow_domains = [
        {"x": [0.0, 1.0], "y": [1 - (k + 1) / 4 + 0.03, 1 - k / 4 - 0.04]} for k in range(4)
    ]
    layout = _layout(height=780, margin={"l": 40, "r": 40, "t": 40, "b": 72})
    # A phone stacks the four radars; the legend goes above them all, clear of Level 0's title.
    narrow: dict[str, Any] = {
        "height": 1560,
        "annotations": [],
        "margin": {"l": 36, "r": 36, "t": 120, "b": 24},
        "legend": {
            "orientation": "h",
            "x": 0.5,
            "xanchor": "center",
            "y": 1.03,
            "yanchor": "bottom",
        },
    }
    annotations = []
    for k, level in enumerate(LEVEL_KEYS):
        key = "polar" if k == 0 else f"polar{k + 1}"
        layout[key] = _polar(floor, domains[k])
        narrow[key] = {"domain": narrow_domains[k]}
        annotations.append(_panel_title(LEVEL_NAMES[level], domains[k]))
        narrow["annotations"].append(_panel_title(LEVEL_NAMES[level], narrow_domains[k]))
    layout["annotations"] = annotations
    layout["legend"] = {
        "orientation": "h",
        "x": 0.5,
        "xanchor": "center",
        "y": -0.05,
        "yanchor": "top",
    }
    return Chart(_figure(data, layout), radar_table(runs), "mirrorbench-radar", narrow=narrow)


def _polar(floor: float, domain: dict[str, list[float]]) -> dict[str, Any]:
    """Return a radar's polar subplot: the radial axis from ``floor`` to 1, TSR on top."""
    return {
        "radialaxis": {
            "range": [floor, 1],
            "dtick": 0.5 if 1 - floor <= 2 else 1,
            "angle": 90,
            "tickangle": 90,
            "gridcolor": "#dddddd",
            "tickfont": {"size": 10},
        },
        "angularaxis": {"direction": "clockwise", "rotation": 90, "gridcolor": "#dddddd"},
        "bgcolor": "#ffffff",
        "domain": domain,
    }


def _panel_title(text: str, domain: Mapping[str, Sequence[float]]) -> dict[str, Any]:
    return {
        # Bold by the font, not <b>: plotly.js draws <b> with a style attribute, which the
        # Content-Security-Policy refuses (mirrorbench_site.csp).
        "text": text,
        "font": {"weight": "bold"},
        "showarrow": False,
        "xref": "paper",
        "yref": "paper",
        "x": (domain["x"][0] + domain["x"][1]) / 2,
        "y": domain["y"][1] + 0.035,
        "xanchor": "center",
        "yanchor": "bottom",
    }


def _translucent(colour: str, alpha: float = 0.12) -> str:
    red, green, blue = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({red}, {green}, {blue}, {alpha})"


def _escape(text: str) -> str:
    """Model names go into hover templates: keep plotly from reading them as markup."""
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace("%", "&#37;")
        .replace("{", "&#123;")
    )


def radar_table(runs: Sequence[ChartRun]) -> ChartTable:
    """Return the radar's numbers: each model's four metrics at each level (Overall column)."""
    rows = [
        [
            run.model,
            LEVEL_NAMES[level],
            *(metric(run.tables[level][OVERALL][m]) for m in RADAR_METRICS),
        ]
        for run in runs
        if run.has_levels
        for level in LEVEL_KEYS
    ]
    return ChartTable(
        caption="The four metrics at each level (Overall column of the level tables)",
        columns=["Model", "Level", *(metric_label(m) for m in RADAR_METRICS)],
        rows=rows,
        note=_level_note(runs),
    )


# Figure 3: metric trajectories across the levels.


def trajectories_figure(runs: Sequence[ChartRun]) -> Chart:
    """Return Fig. 3: one panel per metric (TSR, SIR, FCR, PCR), the level on the x axis, one
    line per model (Overall column)."""
    shown = [run for run in runs if run.has_levels]
    titles = [metric_label(m) for m in RADAR_METRICS]
    # make_subplots(rows=2, cols=2, subplot_titles=titles, horizontal_spacing=0.12,
    # vertical_spacing=0.16): panel k has the axes x{k + 1} and y{k + 1} ("x" and "y" for 1).
    domains = _subplot_grid(2, 2, horizontal_spacing=0.12, vertical_spacing=0.16)
    axes = ["" if k == 0 else str(k + 1) for k in range(len(domains))]
    data = []
    for i, run in enumerate(shown):
        colour, symbol, dash = SERIES_STYLES[i % len(SERIES_STYLES)]
        for k, m in enumerate(RADAR_METRICS):
            data.append(
                _trace(
                    "scatter",
                    name=_escape(run.model),
                    legendgroup=run.slug,
                    showlegend=k == 0,
                    x=[int(level) for level in LEVEL_KEYS],
                    y=[run.tables[level][OVERALL][m] for level in LEVEL_KEYS],
                    mode="lines+markers",
                    line={"color": colour, "dash": dash, "width": 2},
                    marker={"symbol": symbol, "size": 8, "color": colour},
                    hovertemplate=f"{_escape(run.model)}<br>Level %{{x}}<br>"
                    f"{metric_label(m)} %{{y:.3f}}<extra></extra>",
                    xaxis=f"x{axes[k]}",
                    yaxis=f"y{axes[k]}",
                )
            )
    layout = _layout(
        height=640,
        margin={"l": 56, "r": 24, "t": 48, "b": 48},
        legend={"orientation": "h", "x": 0.5, "xanchor": "center", "y": -0.1, "yanchor": "top"},
    )
    layout["annotations"] = _subplot_titles(titles, domains)
    for axis, (x_domain, y_domain) in zip(axes, domains, strict=True):
        layout[f"xaxis{axis}"] = {
            "domain": x_domain,
            "anchor": f"y{axis}",
            "tickvals": [int(level) for level in LEVEL_KEYS],
            "ticktext": [level_short(level) for level in LEVEL_KEYS],
            "range": [-0.2, 3.2],
            "gridcolor": "#e5e5e5",
            "linecolor": "#666666",
            "ticks": "outside",
        }
        layout[f"yaxis{axis}"] = {
            "domain": y_domain,
            "anchor": f"x{axis}",
            "gridcolor": "#e5e5e5",
            "zerolinecolor": "#bbbbbb",
            "linecolor": "#666666",
            "ticks": "outside",
        }
    narrow = _stacked_panels(titles)
    return Chart(
        _figure(data, layout), trajectories_table(runs), "mirrorbench-trajectories", narrow=narrow
    )


def _stacked_panels(titles: Sequence[str]) -> dict[str, Any]:
    """Layout changes that stack a 2 x 2 grid of panels, titled ``titles``, into one column
    (for phones)."""
    rows = 4
    gap = 0.06
    height = (1 - gap * (rows - 1)) / rows
    narrow: dict[str, Any] = {"height": 1300, "annotations": []}
    for k in range(rows):
        top = 1 - k * (height + gap)
        suffix = "" if k == 0 else str(k + 1)
        narrow[f"xaxis{suffix}"] = {"domain": [0, 1]}
        narrow[f"yaxis{suffix}"] = {"domain": [top - height, top]}
        narrow["annotations"].append(
            {
                "text": titles[k],
                "showarrow": False,
                "xref": "paper",
                "yref": "paper",
                "x": 0.5,
                "y": top,
                "xanchor": "center",
                "yanchor": "bottom",
                "font": {"size": 14},
            }
        )
    return narrow


def trajectories_table(runs: Sequence[ChartRun]) -> ChartTable:
    """Return the trajectories' numbers: each model's metrics at levels 0 to 3."""
    rows = [
        [
            run.model,
            metric_label(m),
            *(metric(run.tables[level][OVERALL][m]) for level in LEVEL_KEYS),
        ]
        for run in runs
        if run.has_levels
        for m in RADAR_METRICS
    ]
    return ChartTable(
        caption="Each metric across the levels (Overall column of the level tables)",
        columns=["Model", "Metric", *(LEVEL_NAMES[level] for level in LEVEL_KEYS)],
        rows=rows,
        note=_level_note(runs),
    )


# Table III as a chart: Human against Robot by level.

TRACK_ROWS = (*LEVEL_KEYS, AVG)


def _track_row_name(row: str) -> str:
    return "Average" if row == AVG else LEVEL_NAMES[row]


def tracks_figure(table_iii: Mapping[str, Mapping[str, float | None]], models: int) -> Chart:
    """Return Table III as grouped bars: the mean AVG of the MLLMs by level, one bar per track."""
    rows = [row for row in TRACK_ROWS if row in table_iii]
    data = [
        _trace(
            "bar",
            name=track_label(track),
            x=[_track_row_name(row) for row in rows],
            y=[table_iii[row].get(track) for row in rows],
            marker={"color": colour, "pattern": {"shape": pattern}},
            hovertemplate=f"{track_label(track)}, %{{x}}: %{{y:.3f}}<extra></extra>",
        )
        for track, (colour, pattern) in TRACK_STYLES.items()
    ]
    layout = _layout(
        height=420,
        barmode="group",
        xaxis=_axis(""),
        yaxis=_axis("Mean AVG over the models", zeroline=True),
    )
    return Chart(_figure(data, layout), tracks_table(table_iii, models), "mirrorbench-tracks")


def tracks_table(table_iii: Mapping[str, Mapping[str, float | None]], models: int) -> ChartTable:
    """Return Table III's numbers, as the tracks page shows them."""
    rows = [
        [_track_row_name(row), *(metric(table_iii[row].get(t)) for t in TRACK_STYLES)]
        for row in TRACK_ROWS
        if row in table_iii
    ]
    note = "" if table_iii else "No model has all four level tables with both tracks."
    return ChartTable(
        caption=f"Mean AVG over {models} MLLM result{'s' if models != 1 else ''}, by level "
        "and track",
        columns=["Level", *(track_label(track) for track in TRACKS)],
        rows=rows,
        note=note,
    )


def kinds_in(runs: Sequence[ChartRun]) -> list[str]:
    """Return the kinds of ``runs`` in legend order (for tests and captions)."""
    return [kind for kind in KIND_STYLES if any(run.kind == kind for run in runs)]


__all__ = [
    "MLLM_KINDS",
    "OKABE_ITO",
    "Chart",
    "ChartTable",
    "chart_json",
    "radar_figure",
    "radar_table",
    "stability_figure",
    "stability_ranking_figure",
    "stability_ranking_table",
    "stability_table",
    "tracks_figure",
    "tracks_table",
    "trajectories_figure",
    "trajectories_table",
]
