"""Validation of the leaderboard's query parameters (filters and sorting)."""

from __future__ import annotations

from django import forms

from evaluation.registry import PROVIDERS
from leaderboard.models import ModelEntry, Run
from leaderboard.selectors import SORT_KEYS, LeaderboardFilters
from simulation.versions import BENCHMARK_VERSION, KNOWN_VERSIONS, RETIRED_VERSIONS


class LeaderboardQueryForm(forms.Form):
    """The GET parameters of a table page, its CSV and its API: all optional."""

    kind = forms.MultipleChoiceField(choices=ModelEntry.Kind.choices, required=False)
    source = forms.MultipleChoiceField(choices=Run.Source.choices, required=False)
    params_min = forms.FloatField(required=False, min_value=0, label="Min. parameters (B)")
    params_max = forms.FloatField(required=False, min_value=0, label="Max. parameters (B)")
    q = forms.CharField(required=False, max_length=100, label="Search")
    sort = forms.ChoiceField(choices=[(k, k) for k in SORT_KEYS], required=False)
    order = forms.ChoiceField(choices=[("asc", "asc"), ("desc", "desc")], required=False)
    version = forms.ChoiceField(
        choices=[(v, v) for v in (*KNOWN_VERSIONS, *RETIRED_VERSIONS)],
        required=False,
        label="Benchmark version",
        help_text=f"Defaults to the current version, {BENCHMARK_VERSION}.",
    )

    def clean(self) -> dict[str, object]:
        data = super().clean() or {}
        low, high = data.get("params_min"), data.get("params_max")
        if low is not None and high is not None and low > high:
            self.add_error("params_max", "must be at least params_min")
        return data

    def filters(self) -> LeaderboardFilters:
        """Return the validated filters (call after is_valid())."""
        data = self.cleaned_data
        sort = data.get("sort") or "rank"
        order = data.get("order") or ("asc" if sort in ("rank", "model") else "desc")
        return LeaderboardFilters(
            kinds=tuple(data.get("kind") or ()),
            sources=tuple(data.get("source") or ()),
            params_min=data.get("params_min"),
            params_max=data.get("params_max"),
            q=(data.get("q") or "").strip(),
            sort=sort,
            descending=order == "desc",
            version=data.get("version") or BENCHMARK_VERSION,
        )

    def error_text(self) -> str:
        """Return every error as 'field: message' lines, naming what was expected."""
        lines = []
        for field, errors in self.errors.items():
            for error in errors:
                lines.append(f"{field}: {error}")
        return "\n".join(lines)


class HostedEvaluationForm(forms.Form):
    """What a signed-in user with permission submits to evaluate an API model on the server."""

    SCENE_SETS = [
        ("all", "All 66 scenes"),
        ("human", "Human track (48)"),
        ("robot", "Robot track (18)"),
    ]

    provider = forms.ChoiceField(choices=list(PROVIDERS.items()))
    base_url = forms.URLField(required=False, label="Base URL", assume_scheme="https")
    model = forms.CharField(max_length=200, label="Model name at the provider")
    entry_name = forms.CharField(
        max_length=200,
        required=False,
        label="Leaderboard name",
        help_text="default: the model name",
    )
    kind = forms.ChoiceField(
        choices=[(k, v) for k, v in ModelEntry.Kind.choices if k in ("proprietary", "open-weights")]
    )
    params_b = forms.FloatField(required=False, min_value=0, label="Parameters (billions)")
    api_key = forms.CharField(
        widget=forms.PasswordInput(render_value=False),
        max_length=500,
        label="API key",
        help_text="Encrypted at rest and erased when the run ends.",
    )
    levels = forms.TypedMultipleChoiceField(
        choices=[(str(level), f"Level {level}") for level in range(4)],
        coerce=int,
        initial=["0", "1", "2", "3"],
    )
    scenes = forms.ChoiceField(choices=SCENE_SETS, initial="all")
    private = forms.BooleanField(required=False, label="Keep this run private")
