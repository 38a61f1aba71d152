"""Routes of the REST API (public reads; runs and uploads for accounts), its schema and docs."""

from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from leaderboard import api
from leaderboard.boards import apis as boards
from leaderboard.charts import apis as charts
from leaderboard.mirror_use import apis as mirror_use
from leaderboard.replays import apis as replays
from leaderboard.runs import apis as runs
from leaderboard.submissions import apis as submissions

urlpatterns = [
    path("", api.ApiIndex.as_view(), name="api-index"),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # Swagger UI from local files; its start-up script is a file too (docs/?script=), not
    # inline, so that the Content-Security-Policy allows no inline script (mirrorbench_site.csp).
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    path("models/", boards.ModelListApi.as_view(), name="api-models"),
    path("models/<slug:slug>/", boards.ModelDetailApi.as_view(), name="api-model"),
    path("leaderboards/<str:table>/", boards.LeaderboardApi.as_view(), name="api-leaderboard"),
    path("tracks/", boards.TracksApi.as_view(), name="api-tracks"),
    path("runs/", runs.RunListApi.as_view(), name="api-runs"),
    path("runs/<int:run_id>/", runs.RunDetailApi.as_view(), name="api-run"),
    path(
        "runs/<int:run_id>/process/",
        mirror_use.RunProcessApi.as_view(),
        name="api-run-process",
    ),
    path("episodes/", runs.EpisodeListApi.as_view(), name="api-episodes"),
    path("episodes/<int:episode_id>/", replays.EpisodeDetailApi.as_view(), name="api-episode"),
    path("evaluations/", runs.EvaluationCreateApi.as_view(), name="api-evaluations"),
    path("submissions/", submissions.SubmissionListApi.as_view(), name="api-submissions"),
    path(
        "submissions/<int:submission_id>/",
        submissions.SubmissionDetailApi.as_view(),
        name="api-submission",
    ),
    path("charts/stability/", charts.StabilityChartApi.as_view(), name="api-chart-stability"),
    path("charts/cost/", charts.CostChartApi.as_view(), name="api-chart-cost"),
    path(
        "charts/stability-ranking/",
        charts.StabilityRankingChartApi.as_view(),
        name="api-chart-stability-ranking",
    ),
    path("charts/radar/", charts.RadarChartApi.as_view(), name="api-chart-radar"),
    path(
        "charts/trajectories/",
        charts.TrajectoriesChartApi.as_view(),
        name="api-chart-trajectories",
    ),
    path("charts/tracks/", charts.TracksChartApi.as_view(), name="api-chart-tracks"),
]
