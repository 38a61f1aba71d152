"""The cost-performance chart: each priced run's overall AVG against its dollars per 264
episodes, with the Pareto front (the runs no other beats on both) drawn, and its numbers.

Built as the paper's figures are (``figures.py``: the plotly figure as plain dicts and its table,
the chart's text alternative), from ``charts.selectors.cost_points``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evaluation.cost import FULL_RUN_EPISODES, pareto_front
from leaderboard.charts.figures import (
    KIND_STYLES,
    OKABE_ITO,
    Chart,
    ChartTable,
    _axis,
    _escape,
    _figure,
    _kind_label,
    _layout,
    _trace,
)
from leaderboard.charts.selectors import CostPoint
from leaderboard.formatting import KIND_LABELS, dollars, metric, thousands

COST_COLUMNS = [
    "Model",
    "Kind",
    "Overall AVG",
    f"$ per {FULL_RUN_EPISODES} episodes",
    "Input tokens",
    "Output tokens",
    "Cached input",
    "Price from",
    "Pareto front",
]


def priced(points: Sequence[CostPoint]) -> list[CostPoint]:
    """Return the points the chart can place: a price, measured tokens and an overall AVG."""
    return [p for p in points if p.cost.per_full_run is not None and p.overall_avg is not None]


def front_of(points: Sequence[CostPoint]) -> list[CostPoint]:
    """Return the priced points on the Pareto front, cheapest first: none costs less for as
    much overall AVG."""
    placed = priced(points)
    pairs = [(float(p.cost.per_full_run or 0.0), float(p.overall_avg or 0.0)) for p in placed]
    return [placed[i] for i in pareto_front(pairs)]


def _note(points: Sequence[CostPoint]) -> str:
    unpriced = [p.model for p in points if p not in priced(points)]
    parts = [
        "Dollars are the run's measured tokens at the price the site knows for its model "
        f"(the run's own, the price table, or MIRRORBENCH_PRICES), scaled to {FULL_RUN_EPISODES} "
        "episodes. The paper's rows publish no tokens and are not shown."
    ]
    if unpriced:
        parts.append(f"No price, not drawn: {', '.join(unpriced)}.")
    return " ".join(parts)


def cost_figure(points: Sequence[CostPoint]) -> Chart:
    """Return the chart: one marker per priced run at (dollars per 264 episodes, overall AVG),
    by kind, and the Pareto front as a stepped line through the runs on it."""
    placed = priced(points)
    front = front_of(points)
    data = []
    for kind, (colour, symbol) in KIND_STYLES.items():
        group = [p for p in placed if p.kind == kind]
        if not group:
            continue
        data.append(
            _trace(
                "scatter",
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
        data.append(
            _trace(
                "scatter",
                name="Pareto front",
                x=[p.cost.per_full_run for p in front],
                y=[p.overall_avg for p in front],
                mode="lines",
                line={"color": OKABE_ITO["grey"], "width": 2, "dash": "dash", "shape": "hv"},
                hoverinfo="skip",
            )
        )
    dearest = max((float(p.cost.per_full_run or 0.0) for p in placed), default=0.0)
    # Room right of the dearest run for its name (centred on the marker).
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
    return Chart(_figure(data, layout), cost_table(points), "mirrorbench-cost-performance")


def cost_rows(points: Sequence[CostPoint]) -> list[list[Any]]:
    """Return the chart's numbers unformatted, a row per run (the CSV's rows)."""
    on_front = {id(p) for p in front_of(points)}
    rows = []
    for p in points:
        cost = p.cost
        rows.append(
            [
                p.model,
                p.kind,
                p.overall_avg,
                None if cost.per_full_run is None else round(cost.per_full_run, 4),
                cost.input_tokens,
                cost.output_tokens,
                cost.cached_input_tokens,
                cost.price_source or "no price",
                id(p) in on_front,
            ]
        )
    return rows


def cost_table(points: Sequence[CostPoint]) -> ChartTable:
    """Return the chart's numbers: every run with episodes, priced or not, best AVG first."""
    rows = [
        [
            model,
            KIND_LABELS.get(kind, kind),
            metric(avg),
            dollars(per_run),
            thousands(inputs),
            thousands(outputs),
            thousands(cached) if cached is not None else "\u2014",
            price,
            "yes" if front else "",
        ]
        for model, kind, avg, per_run, inputs, outputs, cached, price, front in cost_rows(points)
    ]
    return ChartTable(
        caption=f"Overall AVG and cost per {FULL_RUN_EPISODES} episodes of each run with episodes",
        columns=COST_COLUMNS,
        rows=rows,
        note=_note(points),
    )
