"""The chart figures as they were built with plotly's graph objects, kept for the tests only.

``leaderboard.charts.figures`` and ``leaderboard.charts.cost`` build each figure's JSON as plain
dicts (plotly's validation cost about 30 ms a figure). This module is their earlier code, which
built the same figures with ``go.Figure``, ``go.Scatter``, ``go.Bar``, ``go.Scatterpolar`` and
``make_subplots`` and turned them into JSON with ``to_plotly_json``:
``test_chart_figures_equal`` checks that both give the same JSON for every chart and input.

Only the code that builds a figure is here; what picks the runs to show (``stability_runs``,
``priced``...), the styles and the text helpers come from the modules under test.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go
import plotly.subplots as subplots

from evaluation.cost import FULL_RUN_EPISODES
from evaluation.vocabulary import LEVEL_KEYS, OVERALL, level_short, metric_label, track_label
from leaderboard.charts.cost import front_of, priced
from leaderboard.charts.figures import (
    FONT,
    KIND_STYLES,
    LABELLED_POINTS,
    LEVEL_NAMES,
    OKABE_ITO,
    RADAR_METRICS,
    SERIES_STYLES,
    TRACK_ROWS,
    TRACK_STYLES,
    _escape,
    _kind_label,
    _quadrant_x,
    _radial_floor,
    _track_row_name,
    _translucent,
    stability_runs,
)
from leaderboard.charts.selectors import RANDOM_SLUG, ChartRun, CostPoint
from leaderboard.formatting import params
from leaderboard.models import ModelEntry


def _layout(**extra: Any) -> dict[str, Any]:
    layout: dict[str, Any] = {
        "template": "none",
        "font": FONT,
        "paper_bgcolor": "#ffffff",
        "plot_bgcolor": "#ffffff",
        "margin": {"l": 64, "r": 24, "t": 24, "b": 64},
        "legend": {"orientation": "h", "x": 0, "y": -0.18, "yanchor": "top"},
        "hoverlabel": {"font": FONT},
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


def _figure(figure: go.Figure) -> dict[str, Any]:
    data = figure.to_plotly_json()
    data["layout"].pop("template", None)
    return {"data": data["data"], "layout": data["layout"]}


def _panel_title(text: str, domain: Mapping[str, Sequence[float]]) -> dict[str, Any]:
    return {
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


def stability_figure(runs: Sequence[ChartRun]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Fig. 2 as plotly built it: (figure, narrow)."""
    shown = stability_runs(runs)
    figure = go.Figure()
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
            marker.update(
                size=[s or min(counts or [1.0]) for s in sizes],
                sizemode="area",
                sizeref=sizeref,
                sizemin=7,
            )
        else:
            marker["size"] = 16
        figure.add_trace(
            go.Scatter(
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
    figure.update_layout(
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
                    "line": line,
                },
                {
                    "type": "line",
                    "xref": "paper",
                    "yref": "y",
                    "x0": 0,
                    "x1": 1,
                    "y0": 0,
                    "y1": 0,
                    "line": line,
                },
            ],
        )
    )
    return _figure(figure), {}


def stability_ranking_figure(runs: Sequence[ChartRun]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Fig. 5 as plotly built it: (figure, narrow)."""
    shown = sorted(stability_runs(runs), key=lambda r: (-(r.cognitive_stability or 0), r.model))
    order = [_escape(run.model) for run in reversed(shown)]
    figure = go.Figure()
    random_cs = next((r.cognitive_stability for r in shown if r.slug == RANDOM_SLUG), None)
    for kind in KIND_STYLES:
        group = [run for run in shown if run.kind == kind]
        if not group:
            continue
        colour, _ = KIND_STYLES[kind]
        values = [run.cognitive_stability or 0.0 for run in group]
        cis = [run.cognitive_stability_ci or (v, v) for run, v in zip(group, values, strict=True)]
        figure.add_trace(
            go.Bar(
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
    figure.update_layout(
        _layout(
            height=max(260, 110 + 24 * len(shown)),
            barmode="overlay",
            margin={"l": 170, "r": 24, "t": 24, "b": 64},
            xaxis=_axis("Cognitive stability (CS), 95% bootstrap interval over scenes"),
            yaxis={"categoryorder": "array", "categoryarray": order, "automargin": True},
            shapes=shapes,
            legend={"orientation": "h", "x": 0, "y": 1.02, "yanchor": "bottom"},
        )
    )
    narrow = {
        "margin": {"l": 110, "r": 12, "t": 96, "b": 64},
        "xaxis": {"title": {"text": "CS, 95% interval over scenes"}},
    }
    return _figure(figure), narrow


def radar_figure(runs: Sequence[ChartRun]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The radar as plotly built it: (figure, narrow)."""
    shown = [run for run in runs if run.has_levels]
    values = [
        run.tables[level][OVERALL][m]
        for run in shown
        for level in LEVEL_KEYS
        for m in RADAR_METRICS
    ]
    floor = _radial_floor(values)
    theta = [metric_label(m) for m in RADAR_METRICS]
    figure = go.Figure()
    for i, run in enumerate(shown):
        colour, symbol, dash = SERIES_STYLES[i % len(SERIES_STYLES)]
        for j, level in enumerate(LEVEL_KEYS):
            cell = run.tables[level][OVERALL]
            r = [cell[m] for m in RADAR_METRICS]
            figure.add_trace(
                go.Scatterpolar(
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
    polar = {
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
    }
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
        layout[key] = {**polar, "domain": domains[k]}
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
    figure.update_layout(layout)
    return _figure(figure), narrow


def trajectories_figure(runs: Sequence[ChartRun]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Fig. 3 as plotly built it: (figure, narrow)."""
    shown = [run for run in runs if run.has_levels]
    titles = [metric_label(m) for m in RADAR_METRICS]
    figure = subplots.make_subplots(
        rows=2, cols=2, subplot_titles=titles, horizontal_spacing=0.12, vertical_spacing=0.16
    )
    for i, run in enumerate(shown):
        colour, symbol, dash = SERIES_STYLES[i % len(SERIES_STYLES)]
        for k, m in enumerate(RADAR_METRICS):
            figure.add_trace(
                go.Scatter(
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
                ),
                row=k // 2 + 1,
                col=k % 2 + 1,
            )
    figure.update_xaxes(
        tickvals=[int(level) for level in LEVEL_KEYS],
        ticktext=[level_short(level) for level in LEVEL_KEYS],
        range=[-0.2, 3.2],
        gridcolor="#e5e5e5",
        linecolor="#666666",
        ticks="outside",
    )
    figure.update_yaxes(
        gridcolor="#e5e5e5", zerolinecolor="#bbbbbb", linecolor="#666666", ticks="outside"
    )
    figure.update_layout(
        **_layout(
            height=640,
            margin={"l": 56, "r": 24, "t": 48, "b": 48},
            legend={"orientation": "h", "x": 0.5, "xanchor": "center", "y": -0.1, "yanchor": "top"},
        )
    )
    return _figure(figure), _stacked_panels(figure)


def _stacked_panels(figure: go.Figure) -> dict[str, Any]:
    rows = 4
    gap = 0.06
    height = (1 - gap * (rows - 1)) / rows
    narrow: dict[str, Any] = {"height": 1300, "annotations": []}
    for k in range(rows):
        top = 1 - k * (height + gap)
        suffix = "" if k == 0 else str(k + 1)
        narrow[f"xaxis{suffix}"] = {"domain": [0, 1]}
        narrow[f"yaxis{suffix}"] = {"domain": [top - height, top]}
        title = figure.layout.annotations[k].text
        narrow["annotations"].append(
            {
                "text": title,
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


def tracks_figure(
    table_iii: Mapping[str, Mapping[str, float | None]],
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Table III's bars as plotly built them: (figure, narrow)."""
    rows = [row for row in TRACK_ROWS if row in table_iii]
    figure = go.Figure()
    for track, (colour, pattern) in TRACK_STYLES.items():
        figure.add_trace(
            go.Bar(
                name=track_label(track),
                x=[_track_row_name(row) for row in rows],
                y=[table_iii[row].get(track) for row in rows],
                marker={"color": colour, "pattern": {"shape": pattern}},
                hovertemplate=f"{track_label(track)}, %{{x}}: %{{y:.3f}}<extra></extra>",
            )
        )
    figure.update_layout(
        _layout(
            height=420,
            barmode="group",
            xaxis=_axis(""),
            yaxis=_axis("Mean AVG over the models", zeroline=True),
        )
    )
    return _figure(figure), {}


def cost_figure(points: Sequence[CostPoint]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The cost-performance chart as plotly built it: (figure, narrow)."""
    placed = priced(points)
    front = front_of(points)
    figure = go.Figure()
    for kind, (colour, symbol) in KIND_STYLES.items():
        group = [p for p in placed if p.kind == kind]
        if not group:
            continue
        figure.add_trace(
            go.Scatter(
                name=_kind_label(kind),
                x=[p.cost.per_full_run for p in group],
                y=[p.overall_avg for p in group],
                mode="markers+text",
                text=[_escape(p.model) for p in group],
                textposition="top center",
                textfont={"size": 11},
                hovertemplate="%{text}<br>$%{x:.2f} per " + str(FULL_RUN_EPISODES) + " episodes"
                "<br>AVG %{y:.3f}<extra></extra>",
                marker={
                    "color": colour,
                    "symbol": symbol,
                    "size": 14,
                    "opacity": 0.85,
                    "line": {"color": "#ffffff", "width": 1},
                },
            )
        )
    if front:
        figure.add_trace(
            go.Scatter(
                name="Pareto front",
                x=[p.cost.per_full_run for p in front],
                y=[p.overall_avg for p in front],
                mode="lines",
                line={"color": OKABE_ITO["grey"], "width": 2, "dash": "dash", "shape": "hv"},
                hoverinfo="skip",
            )
        )
    dearest = max((float(p.cost.per_full_run or 0.0) for p in placed), default=0.0)
    x_range = {"range": [0, dearest * 1.15]} if dearest > 0 else {"rangemode": "tozero"}
    layout: dict[str, Any] = _layout(
        height=480,
        xaxis=_axis(f"US dollars per {FULL_RUN_EPISODES} episodes", **x_range),
        yaxis=_axis("Task performance (overall AVG)"),
    )
    if not placed:
        layout["annotations"] = [
            {
                "text": "No run on this board has a price yet",
                "xref": "paper",
                "yref": "paper",
                "x": 0.5,
                "y": 0.5,
                "showarrow": False,
            }
        ]
    figure.update_layout(layout)
    return _figure(figure), {}
