"""The mirror-use page and its CSV."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from evaluation.vocabulary import (
    CONDITION_SUMMARIES,
    CONTROL_CONDITIONS,
    MAIN_CONDITION,
    condition_label,
)
from leaderboard.exports import csv_response
from leaderboard.mirror_use.selectors import (
    TABLES,
    mirror_use_csv_rows,
    mirror_use_rows,
    process_csv_rows,
    run_process_metrics,
)
from leaderboard.models import Run
from leaderboard.runs.selectors import run_for


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


def run_process_csv(request: HttpRequest, run_id: int) -> HttpResponse:
    """What a run's answers say: mirror attribution and reasoning-action consistency."""
    try:
        run = run_for(run_id=run_id, user=request.user)
    except Run.DoesNotExist:
        raise Http404(f"no run {run_id} that you may see") from None
    header, lines = process_csv_rows(run_process_metrics(run=run))
    return csv_response(f"mirrorbench-run-{run.pk}-process.csv", header, lines)
