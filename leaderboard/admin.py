"""Django admin for every leaderboard model, usable by a moderator."""

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from leaderboard.models import (
    ApiToken,
    BenchmarkVersion,
    Episode,
    ModelEntry,
    Run,
    RunScore,
    Scene,
    Step,
    Submission,
)
from leaderboard.services.data_version import data_version_bump


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


@admin.register(ModelEntry)
class ModelEntryAdmin(ChangesTables, admin.ModelAdmin):
    list_display = ["name", "organisation", "kind", "params_b", "created"]
    list_filter = ["kind"]
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
    fields = ("table", "track", "tsr", "sir", "fcr", "pcr", "avg", "episodes")
    readonly_fields = fields


@admin.register(Run)
class RunAdmin(ChangesTables, admin.ModelAdmin):
    list_display = ["id", "model_entry", "source", "status", "visibility", "listed", "created"]
    list_filter = ["source", "status", "visibility", "listed"]
    list_select_related = ["model_entry"]
    search_fields = ["model_entry__name", "agent"]
    raw_id_fields = ["owner"]
    inlines = [RunScoreInline]


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
    list_display = ["run", "table", "track", "tsr", "sir", "fcr", "pcr", "avg", "episodes"]
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
