"""The search page's GET parameters."""

from __future__ import annotations

from typing import Any

from django import forms

from evaluation.vocabulary import (
    CONDITION_LABELS,
    CONDITIONS,
    LEVEL_KEYS,
    OUTCOMES,
    TRACK_KEYS,
    level_label,
)
from leaderboard.search.query import Query, QueryError, parse_query

MAX_PAGE = 50


class StepSearchForm(forms.Form):
    """``?q=...`` and its filters, all optional; ``q`` is parsed into a ``Query``."""

    q = forms.CharField(required=False, max_length=400, label="Search responses")
    model = forms.SlugField(required=False, max_length=200, label="Model")
    level = forms.TypedChoiceField(
        choices=[("", "All levels"), *((key, level_label(key)) for key in LEVEL_KEYS)],
        coerce=int,
        empty_value=None,
        required=False,
    )
    track = forms.ChoiceField(choices=[("", "Both tracks"), *TRACK_KEYS.items()], required=False)
    outcome = forms.ChoiceField(choices=[("", "Any outcome"), *OUTCOMES.items()], required=False)
    condition = forms.ChoiceField(
        choices=[("", "Any condition"), *((c, CONDITION_LABELS.get(c, c)) for c in CONDITIONS)],
        required=False,
    )
    run = forms.IntegerField(required=False, min_value=1, widget=forms.HiddenInput)
    page = forms.IntegerField(required=False, min_value=1, max_value=MAX_PAGE)

    def clean_q(self) -> Query:
        try:
            return parse_query(self.cleaned_data.get("q") or "")
        except QueryError as error:
            raise forms.ValidationError(str(error)) from None

    def query_text(self) -> str:
        return str(self.data.get("q", "")).strip()

    def filters(self) -> dict[str, Any]:
        """The filters chosen, by name (valid form only)."""
        return {
            name: self.cleaned_data.get(name)
            for name in ("model", "level", "track", "outcome", "condition")
        }
