"""The mirror-use page and its CSV."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from evaluation.vocabulary import (
    CONDITION_SUMMARIES,
    CONTROL_CONDITIONS,
    MAIN_CONDITION,
    condition_label,
)
from leaderboard.exports import csv_response
from leaderboard.mirror_use.selectors import TABLES, mirror_use_csv_rows, mirror_use_rows


def mirror_use_page(request: HttpRequest) -> HttpResponse:
    """Per model and level: the main AVG, each control's, and main minus each control."""
    rows = mirror_use_rows()
    controls = [
        {"name": c, "label": condition_label(c), "summary": CONDITION_SUMMARIES[c]}
        for c in CONTROL_CONDITIONS
    ]
    context = {
        "rows": rows,
        "tables": TABLES,
        "main": MAIN_CONDITION,
        "controls": controls,
    }
    return render(request, "leaderboard/mirror_use.html", context)


def mirror_use_csv(request: HttpRequest) -> HttpResponse:
    """The page's numbers for AVG and TSR, one line per model, table and metric."""
    header, lines = mirror_use_csv_rows(mirror_use_rows())
    return csv_response("mirrorbench-mirror-use.csv", header, lines)
