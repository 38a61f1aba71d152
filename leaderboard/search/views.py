"""The search page: ``/search/?q=...`` over every public response, or one run's (``&run=ID``)."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from leaderboard.models import Run
from leaderboard.runs.selectors import run_for
from leaderboard.search.forms import StepSearchForm
from leaderboard.search.selectors import (
    model_entry_exists,
    search_filters_context,
    step_search,
)


def _without_page(request: HttpRequest) -> str:
    params = request.GET.copy()
    params.pop("page", None)
    return params.urlencode()


def search_page(request: HttpRequest) -> HttpResponse:
    form = StepSearchForm(request.GET)
    run: Run | None = None
    valid = form.is_valid()
    if valid and form.cleaned_data.get("run"):
        try:
            run = run_for(run_id=form.cleaned_data["run"], user=request.user)
        except Run.DoesNotExist:
            raise Http404("No run with this id that you may see") from None
    if (
        valid
        and form.cleaned_data.get("model")
        and not model_entry_exists(slug=form.cleaned_data["model"])
    ):
        form.add_error("model", f"no model has the slug {form.cleaned_data['model']!r}")
        valid = False
    query = form.cleaned_data.get("q") if valid else None
    results = None
    if query is not None and query.terms:
        results = step_search(
            query=query, run=run, page=form.cleaned_data.get("page") or 1, **form.filters()
        )
    context = {
        "form": form,
        "run": run,
        "results": results,
        "query_text": form.query_text(),
        "params": _without_page(request),
        **search_filters_context(run=run),
    }
    return render(request, "leaderboard/search.html", context, status=200 if valid else 400)
