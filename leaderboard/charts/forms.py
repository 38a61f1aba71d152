"""Validation of the chart pages' and the chart API's query parameters."""

from __future__ import annotations

import re
from typing import Any

from django import forms

from leaderboard.boards.forms import LeaderboardQueryForm
from leaderboard.charts.selectors import MAX_MODELS, slugs_unknown
from simulation.versions import BENCHMARK_VERSION

_SLUG = re.compile(r"[-a-zA-Z0-9_]+")


class ModelSlugsField(forms.Field):
    """Repeated ``m`` parameters: model slugs, in the order given, each at most once."""

    widget = forms.MultipleHiddenInput

    def __init__(self, *, max_models: int, **kwargs: Any) -> None:
        self.max_models = max_models
        super().__init__(**kwargs)

    def to_python(self, value: Any) -> list[str]:
        values = [value] if isinstance(value, str) else list(value or [])
        slugs = [str(v).strip() for v in values if str(v).strip()]
        for slug in slugs:
            if len(slug) > 200 or not _SLUG.fullmatch(slug):
                raise forms.ValidationError(
                    f"{slug[:40]!r} is not a model slug (letters, digits, - and _)"
                )
        slugs = list(dict.fromkeys(slugs))
        if len(slugs) > self.max_models:
            raise forms.ValidationError(
                f"at most {self.max_models} models, got {len(slugs)}", code="max_models"
            )
        return slugs


class ChartQueryForm(forms.Form):
    """The GET parameters of the chart pages and the chart API: models and a version."""

    m = ModelSlugsField(
        max_models=MAX_MODELS,
        required=False,
        label="Models",
        help_text=f"Model slugs, up to {MAX_MODELS}; repeat the parameter: ?m=a&m=b.",
    )
    version = LeaderboardQueryForm.base_fields["version"]
    baselines = LeaderboardQueryForm.base_fields["baselines"]

    def __init__(self, *args: Any, min_models: int = 0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.min_models = min_models

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        slugs = data.get("m")
        if slugs is None:
            return data
        if len(slugs) < self.min_models:
            self.add_error(
                "m", f"choose {self.min_models} to {MAX_MODELS} models, got {len(slugs)}"
            )
            return data
        version = data.get("version") or BENCHMARK_VERSION
        unknown = slugs_unknown(version=version, slugs=slugs) if slugs else []
        if unknown:
            names = ", ".join(repr(slug) for slug in unknown)
            self.add_error("m", f"no model {names} on the {version} leaderboard")
        return data

    @property
    def chosen_version(self) -> str:
        """The validated version (call after is_valid())."""
        return self.cleaned_data.get("version") or BENCHMARK_VERSION

    @property
    def show_baselines(self) -> bool:
        """Whether the sanity-check baselines are drawn (call after is_valid())."""
        return self.cleaned_data.get("baselines") == "show"

    @property
    def chosen_slugs(self) -> list[str]:
        """The validated slugs (call after is_valid())."""
        return list(self.cleaned_data.get("m") or [])

    def error_text(self) -> str:
        """Return every error as 'field: message' lines."""
        return "\n".join(f"{f}: {e}" for f, errors in self.errors.items() for e in errors)
