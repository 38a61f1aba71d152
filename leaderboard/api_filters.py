"""Query filters of the REST API: FilterSets whose bad values are 400s naming the parameter.

django-filter's DRF backend answers an invalid filter form with a 400 whose body maps each
parameter to its messages. Two stock filters would otherwise swallow a bad value silently
(a boolean that is neither true nor false, an id that is not a whole number), so this module
has strict versions of them.
"""

from __future__ import annotations

from typing import Any

import django_filters
from django import forms
from django.core.exceptions import ValidationError
from django.db.models import Q, QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field

from evaluation.vocabulary import LEVELS, levels_text
from leaderboard.models import Episode, ModelEntry, Run
from simulation.versions import KNOWN_VERSIONS, RETIRED_VERSIONS

_TRUE = ("true", "1")
_FALSE = ("false", "0")


class StrictBooleanField(forms.Field):
    """A yes/no query value: true/false or 1/0 (any case); anything else is an error."""

    def to_python(self, value: Any) -> bool | None:
        if value in self.empty_values:
            return None
        text = str(value).strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        raise ValidationError("Enter true or false.", code="invalid")


class StrictBooleanFilter(django_filters.BooleanFilter):
    """A boolean filter that refuses values it does not understand instead of ignoring them."""

    field_class = StrictBooleanField


_ID_MAX = 2**63 - 1
"""The largest id a database's big integer column holds."""


@extend_schema_field(OpenApiTypes.INT)
class IdFilter(django_filters.NumberFilter):
    """A row id: ``run=1.5``, ``run=abc`` or an id past the column's range is an error.

    Past the range, the database driver would raise (SQLite: OverflowError) and give a 500.
    """

    field_class = forms.IntegerField

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("min_value", 1)
        kwargs.setdefault("max_value", _ID_MAX)
        super().__init__(*args, **kwargs)


class SlugFilter(django_filters.CharFilter):
    """A slug: letters, digits, hyphens and underscores."""

    field_class = forms.SlugField


class _ParamsRangeForm(forms.Form):
    """The filter form of model entries: ``params_min`` may not exceed ``params_max``."""

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        low, high = data.get("params_min"), data.get("params_max")
        if low is not None and high is not None and low > high:
            self.add_error("params_max", "must be at least params_min")
        start, end = data.get("released_from"), data.get("released_to")
        if start is not None and end is not None and start > end:
            self.add_error("released_to", "must be on or after released_from")
        return data


class ModelEntryFilter(django_filters.FilterSet):
    """Filters of ``/api/models/``."""

    kind = django_filters.MultipleChoiceFilter(
        choices=ModelEntry.Kind.choices,
        distinct=False,
        help_text="Kind of entry; repeat to allow several.",
    )
    organisation = django_filters.CharFilter(
        lookup_expr="iexact", help_text="Organisation, exactly (case-insensitive)."
    )
    q = django_filters.CharFilter(
        method="search", max_length=100, help_text="Text in the name or the organisation."
    )
    params_min = django_filters.NumberFilter(
        field_name="params_b",
        lookup_expr="gte",
        min_value=0,
        help_text="At least this many parameters, in billions (entries without a count are "
        "left out).",
    )
    released_from = django_filters.DateFilter(
        field_name="release_date",
        lookup_expr="gte",
        input_formats=["%Y-%m-%d"],
        help_text="Released on or after this day, YYYY-MM-DD (undated entries are left out).",
    )
    released_to = django_filters.DateFilter(
        field_name="release_date",
        lookup_expr="lte",
        input_formats=["%Y-%m-%d"],
        help_text="Released on or before this day, YYYY-MM-DD (undated entries are left out).",
    )
    reasoning = django_filters.MultipleChoiceFilter(
        choices=ModelEntry.Reasoning.choices,
        distinct=False,
        help_text="Reasoning mode or effort; repeat to allow several.",
    )
    licence = django_filters.CharFilter(
        lookup_expr="iexact", help_text="Licence, exactly (case-insensitive)."
    )
    scaffold = django_filters.MultipleChoiceFilter(
        choices=ModelEntry.Scaffold.choices,
        distinct=False,
        help_text="model (plain models) or agent (agent scaffolds); repeat for both.",
    )
    params_max = django_filters.NumberFilter(
        field_name="params_b",
        lookup_expr="lte",
        min_value=0,
        help_text="At most this many parameters, in billions (entries without a count are "
        "left out).",
    )

    class Meta:
        model = ModelEntry
        fields = ()
        form = _ParamsRangeForm

    def search(self, queryset: QuerySet[ModelEntry], name: str, value: str) -> QuerySet[ModelEntry]:
        """Return the entries whose name or organisation contains ``value``, in any case."""
        needle = value.strip()
        if not needle:
            return queryset
        return queryset.filter(Q(name__icontains=needle) | Q(organisation__icontains=needle))


class RunFilter(django_filters.FilterSet):
    """Filters of ``/api/runs/``."""

    model = SlugFilter(field_name="model_entry__slug", help_text="Slug of the model entry.")
    source = django_filters.MultipleChoiceFilter(
        choices=Run.Source.choices,
        distinct=False,
        help_text="Where the results come from; repeat to allow several.",
    )
    status = django_filters.ChoiceFilter(choices=Run.Status.choices, help_text="Run status.")
    listed = StrictBooleanFilter(help_text="Shown on the leaderboard (true or false).")
    version = django_filters.ChoiceFilter(
        field_name="benchmark__name",
        choices=[(v, v) for v in (*KNOWN_VERSIONS, *RETIRED_VERSIONS)],
        help_text="Benchmark version the run was measured with.",
    )

    class Meta:
        model = Run
        fields = ()


class EpisodeFilter(django_filters.FilterSet):
    """Filters of ``/api/episodes/``."""

    run = IdFilter(field_name="run_id", help_text="Id of the run.")
    level = django_filters.ChoiceFilter(
        choices=[(level, str(level)) for level in LEVELS],
        help_text=f"Prompt level, one of {levels_text()}.",
    )
    scene = django_filters.CharFilter(
        field_name="scene__scene_id", help_text="Scene id, as in the scene catalogue."
    )
    status = django_filters.ChoiceFilter(
        choices=Episode.Status.choices, help_text="Episode status."
    )
    success = StrictBooleanFilter(help_text="Whether the episode succeeded (true or false).")

    class Meta:
        model = Episode
        fields = ()
