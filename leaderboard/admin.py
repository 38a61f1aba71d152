"""Django admin for every leaderboard model, usable by a moderator."""

from django.contrib import admin

from leaderboard.models import BenchmarkVersion, Episode, ModelEntry, Run, RunScore, Scene, Step


@admin.register(ModelEntry)
class ModelEntryAdmin(admin.ModelAdmin):
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
class RunAdmin(admin.ModelAdmin):
    list_display = ["id", "model_entry", "source", "status", "visibility", "listed", "created"]
    list_filter = ["source", "status", "visibility", "listed"]
    list_select_related = ["model_entry"]
    search_fields = ["model_entry__name", "agent"]
    raw_id_fields = ["owner"]
    inlines = [RunScoreInline]


@admin.register(Episode)
class EpisodeAdmin(admin.ModelAdmin):
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
class RunScoreAdmin(admin.ModelAdmin):
    list_display = ["run", "table", "track", "tsr", "sir", "fcr", "pcr", "avg", "episodes"]
    list_filter = ["table", "track"]
    list_select_related = ["run__model_entry"]
    raw_id_fields = ["run"]
