"""Forms of the boards: the leaderboard's filters and sort."""

from __future__ import annotations

from django import forms

from leaderboard.boards.selectors import SORT_KEYS, LeaderboardFilters, MetadataFilters
from leaderboard.models import ModelEntry, Run
from simulation.versions import BENCHMARK_VERSION, KNOWN_VERSIONS, RETIRED_VERSIONS


def model_facts_fields() -> tuple[forms.Field, ...]:
    """Return fresh form fields for a model's facts, each optional: ``release_date``,
    ``reasoning``, ``licence``, ``scaffold`` (the upload and evaluate forms unpack them)."""
    return (
        forms.DateField(
            required=False,
            input_formats=["%Y-%m-%d"],
            label="Release date",
            help_text="YYYY-MM-DD, if known.",
            widget=forms.DateInput(attrs={"type": "date"}),
        ),
        forms.ChoiceField(
            choices=[("", "Not stated"), *ModelEntry.Reasoning.choices],
            required=False,
            label="Reasoning mode or effort",
        ),
        forms.CharField(
            max_length=100,
            required=False,
            label="Licence",
            help_text="Of the weights: an SPDX id such as Apache-2.0, or proprietary.",
        ),
        forms.ChoiceField(
            choices=[("", "Not stated"), *ModelEntry.Scaffold.choices],
            required=False,
            label="Model or agent",
            help_text="Plain model: the model answered the prompts itself; agent scaffold: an "
            "agent (tools, memory, planning) built around a model did.",
        ),
    )


class TextListField(forms.Field):
    """Several short texts, one per repeated parameter (``?organisation=A&organisation=B``);
    blank ones are dropped."""

    widget = forms.MultipleHiddenInput
    max_values = 20
    max_length = 200

    def to_python(self, value: object) -> tuple[str, ...]:
        if value in self.empty_values:
            return ()
        values = value if isinstance(value, list | tuple) else [value]
        texts = tuple(dict.fromkeys(str(v).strip() for v in values if str(v).strip()))
        if len(texts) > self.max_values:
            raise forms.ValidationError(f"at most {self.max_values} values")
        for text in texts:
            if len(text) > self.max_length:
                raise forms.ValidationError(f"each value at most {self.max_length} characters")
        return texts


class LeaderboardQueryForm(forms.Form):
    """The GET parameters of a table page, its CSV and its API: all optional."""

    kind = forms.MultipleChoiceField(choices=ModelEntry.Kind.choices, required=False)
    source = forms.MultipleChoiceField(choices=Run.Source.choices, required=False)
    params_min = forms.FloatField(required=False, min_value=0, label="Min. parameters (B)")
    params_max = forms.FloatField(required=False, min_value=0, label="Max. parameters (B)")
    q = forms.CharField(required=False, max_length=100, label="Search")
    organisation = TextListField(
        required=False,
        label="Organisation",
        help_text="The model's organisation or provider, exactly (any case); repeat for several.",
    )
    released_from = forms.DateField(
        required=False,
        input_formats=["%Y-%m-%d"],
        label="Released from",
        help_text="Models released on or after this day (YYYY-MM-DD); undated ones are left out.",
    )
    released_to = forms.DateField(
        required=False,
        input_formats=["%Y-%m-%d"],
        label="Released to",
        help_text="Models released on or before this day (YYYY-MM-DD); undated ones are left out.",
    )
    reasoning = forms.MultipleChoiceField(
        choices=ModelEntry.Reasoning.choices,
        required=False,
        label="Reasoning",
        help_text="Reasoning mode or effort; repeat to allow several.",
    )
    licence = TextListField(
        required=False,
        label="Licence",
        help_text="The weights' licence, exactly (any case: apache-2.0, proprietary); repeat "
        "for several.",
    )
    scaffold = forms.MultipleChoiceField(
        choices=ModelEntry.Scaffold.choices,
        required=False,
        label="Model or agent",
        help_text="model: plain models; agent: agent scaffolds around a model.",
    )
    sort = forms.ChoiceField(choices=[(k, k) for k in SORT_KEYS], required=False)
    order = forms.ChoiceField(choices=[("asc", "asc"), ("desc", "desc")], required=False)
    version = forms.ChoiceField(
        choices=[(v, v) for v in (*KNOWN_VERSIONS, *RETIRED_VERSIONS)],
        required=False,
        label="Benchmark version",
        help_text=f"Defaults to the current version, {BENCHMARK_VERSION}.",
    )
    rendered_by = forms.ChoiceField(
        choices=[("mujoco", "mujoco"), ("isaac", "isaac")],
        required=False,
        label="Renderer",
        help_text="mujoco: runs whose agents saw this site's MuJoCo frames; isaac: Isaac Sim's "
        "(the paper's reported rows, and runs rendered with MIRRORBENCH_RENDERER=isaac).",
    )
    baselines = forms.ChoiceField(
        choices=[("show", "show")],
        required=False,
        label="Show every baseline",
        help_text="show: the sanity-check baselines (the oracle) too; hidden by default.",
    )
    ci = forms.ChoiceField(
        choices=[("show", "show")],
        required=False,
        label="Show intervals",
        help_text="show: each score's 95% interval as a half-width beside it (pages only).",
    )

    def clean(self) -> dict[str, object]:
        data = super().clean() or {}
        low, high = data.get("params_min"), data.get("params_max")
        if low is not None and high is not None and low > high:
            self.add_error("params_max", "must be at least params_min")
        start, end = data.get("released_from"), data.get("released_to")
        if start is not None and end is not None and start > end:
            self.add_error("released_to", "must be on or after released_from")
        return data

    def filters(self) -> LeaderboardFilters:
        """Return the validated filters (call after is_valid())."""
        data = self.cleaned_data
        sort = data.get("sort") or "rank"
        # Ranks and names read best first, scores highest first.
        order = data.get("order") or ("asc" if sort in ("rank", "rank_low", "model") else "desc")
        return LeaderboardFilters(
            kinds=tuple(data.get("kind") or ()),
            sources=tuple(data.get("source") or ()),
            params_min=data.get("params_min"),
            params_max=data.get("params_max"),
            q=(data.get("q") or "").strip(),
            sort=sort,
            descending=order == "desc",
            version=data.get("version") or BENCHMARK_VERSION,
            renderer=data.get("rendered_by") or "",
            baselines=data.get("baselines") == "show",
            intervals=data.get("ci") == "show",
            metadata=self.metadata_filters(),
        )

    def metadata_filters(self) -> MetadataFilters:
        """Return the validated filters on the model entries' metadata (after is_valid())."""
        data = self.cleaned_data
        return MetadataFilters(
            organisations=tuple(data.get("organisation") or ()),
            released_from=data.get("released_from"),
            released_to=data.get("released_to"),
            reasoning=tuple(data.get("reasoning") or ()),
            licences=tuple(data.get("licence") or ()),
            scaffolds=tuple(data.get("scaffold") or ()),
        )

    def error_text(self) -> str:
        """Return every error as 'field: message' lines, naming what was expected."""
        lines = []
        for field, errors in self.errors.items():
            for error in errors:
                lines.append(f"{field}: {error}")
        return "\n".join(lines)
