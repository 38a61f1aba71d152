"""Django admin for every leaderboard model, usable by a moderator."""

from typing import Any, ClassVar

from django import forms
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from evaluation.vocabulary import METRICS
from leaderboard.boards.entries import entry_name_match
from leaderboard.data_version import data_version_bump
from leaderboard.errors import FieldError
from leaderboard.models import (
    ApiToken,
    BenchmarkVersion,
    Episode,
    ModelEntry,
    ModelPrice,
    Run,
    RunScore,
    Scene,
    Step,
    Submission,
)


class ChangesTables:
    """Admin hooks for rows the tables show: every save or delete bumps the data version, so a
    moderator's edit (a run unlisted or made private, an entry renamed) shows at once."""

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)  # type: ignore[misc]
        data_version_bump()

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        super().save_related(request, form, formsets, change)  # type: ignore[misc]
        data_version_bump()

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        super().delete_model(request, obj)  # type: ignore[misc]
        data_version_bump()

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        super().delete_queryset(request, queryset)  # type: ignore[misc]
        data_version_bump()


class ModelEntryForm(forms.ModelForm):
    """A new or changed name is stored in its display form (NFKC, spaces collapsed) and
    refused, as at every other door, when it holds what nobody can see or looks like another
    entry's name (``leaderboard.accounts.names``); an unchanged name is left as it is."""

    class Meta:
        model = ModelEntry
        fields = [
            "name",
            "slug",
            "organisation",
            "kind",
            "params_b",
            "release_date",
            "reasoning",
            "licence",
            "scaffold",
            "links",
            "description",
            "owner",
        ]

    def clean_name(self) -> str:
        name: str = self.cleaned_data["name"]
        if self.instance.pk is not None and name == self.instance.name:
            return name
        try:
            clean, same = entry_name_match(name=name, field="name", exclude=self.instance)
        except FieldError as exc:
            raise forms.ValidationError(exc.message) from None
        if same is not None:
            raise forms.ValidationError(
                f"{same.name!r} is the name of an existing entry (names are compared without case)"
            )
        return clean


@admin.register(ModelEntry)
class ModelEntryAdmin(ChangesTables, admin.ModelAdmin):
    form = ModelEntryForm
    list_display = ["name", "organisation", "kind", "params_b", "release_date", "created"]
    list_filter = ["kind", "reasoning", "scaffold"]
    search_fields = ["name", "organisation"]
    prepopulated_fields = {"slug": ["name"]}


@admin.register(BenchmarkVersion)
class BenchmarkVersionAdmin(admin.ModelAdmin):
    list_display = ["scene_set", "prompt_version", "dynamics_version", "created"]


@admin.register(Scene)
class SceneAdmin(admin.ModelAdmin):
    list_display = ["scene_id", "track", "body", "hand", "mark", "d0_steps", "max_steps"]
    list_filter = ["benchmark", "track", "body", "hand", "mark"]
    search_fields = ["scene_id"]


class RunScoreInline(admin.TabularInline):
    model = RunScore
    extra = 0
    fields: ClassVar[tuple[str, ...]] = ("table", "track", *METRICS, "episodes")
    readonly_fields = fields


@admin.register(Run)
class RunAdmin(ChangesTables, admin.ModelAdmin):
    list_display = ["id", "model_entry", "source", "status", "visibility", "listed", "created"]
    list_filter = ["source", "status", "visibility", "listed"]
    list_select_related = ["model_entry"]
    search_fields = ["model_entry__name", "agent"]
    raw_id_fields = ["owner"]
    inlines = [RunScoreInline]


@admin.register(ModelPrice)
class ModelPriceAdmin(ChangesTables, admin.ModelAdmin):
    """The price table: what each agent's tokens cost, for the runs' dollars and the
    cost-performance chart (a change shows at once: the tables' data version is bumped)."""

    list_display = [
        "agent",
        "input_per_mtok",
        "output_per_mtok",
        "cached_input_per_mtok",
        "source",
        "updated",
    ]
    search_fields = ["agent"]


@admin.register(Episode)
class EpisodeAdmin(ChangesTables, admin.ModelAdmin):
    list_display = ["id", "run", "scene", "level", "status", "success", "avg"]
    list_filter = ["status", "level", "success"]
    list_select_related = ["run__model_entry", "scene"]
    raw_id_fields = ["run", "scene"]


@admin.register(Step)
class StepAdmin(admin.ModelAdmin):
    list_display = ["id", "episode", "index", "option", "executed", "distance_steps"]
    list_select_related = ["episode__scene", "episode__run__model_entry"]
    raw_id_fields = ["episode"]


@admin.register(RunScore)
class RunScoreAdmin(ChangesTables, admin.ModelAdmin):
    list_display = ["run", "table", "track", *METRICS, "episodes"]
    list_filter = ["table", "track"]
    list_select_related = ["run__model_entry"]
    raw_id_fields = ["run"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Tokens are made by their users (profile page) or ``manage.py token``; keys are hashed."""

    list_display = ("user", "name", "prefix", "created", "last_used")
    search_fields = ("user__username", "name", "prefix")
    readonly_fields = ("user", "prefix", "key_hash", "created", "last_used")

    def has_add_permission(self, request: object) -> bool:
        return False


@admin.register(Submission)
class SubmissionAdmin(admin.ModelAdmin):
    """Decisions go through the review page (/submissions/<id>/), which lists and unlists runs."""

    list_display = ("model_name", "owner", "episodes", "partial", "review", "created")
    list_filter = ("review", "partial", "kind")
    search_fields = ("model_name", "owner__username", "sha256")
    readonly_fields = [f.name for f in Submission._meta.fields]

    def has_add_permission(self, request: object) -> bool:
        return False
