"""Routes of the REST API (read-only, plus starting hosted runs), its schema and its docs."""

from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from leaderboard import apis, chart_apis, submission_apis

urlpatterns = [
    path("", apis.ApiIndex.as_view(), name="api-index"),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # Swagger UI from local files; its start-up script is a file too (docs/?script=), not
    # inline, so that the Content-Security-Policy allows no inline script (mirrorbench_site.csp).
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    path("models/", apis.ModelListApi.as_view(), name="api-models"),
    path("models/<slug:slug>/", apis.ModelDetailApi.as_view(), name="api-model"),
    path("leaderboards/<str:table>/", apis.LeaderboardApi.as_view(), name="api-leaderboard"),
    path("tracks/", apis.TracksApi.as_view(), name="api-tracks"),
    path("runs/", apis.RunListApi.as_view(), name="api-runs"),
    path("runs/<int:run_id>/", apis.RunDetailApi.as_view(), name="api-run"),
    path("episodes/", apis.EpisodeListApi.as_view(), name="api-episodes"),
    path("episodes/<int:episode_id>/", apis.EpisodeDetailApi.as_view(), name="api-episode"),
    path("evaluations/", apis.EvaluationCreateApi.as_view(), name="api-evaluations"),
    path("submissions/", submission_apis.SubmissionListApi.as_view(), name="api-submissions"),
    path(
        "submissions/<int:submission_id>/",
        submission_apis.SubmissionDetailApi.as_view(),
        name="api-submission",
    ),
    path("charts/stability/", chart_apis.StabilityChartApi.as_view(), name="api-chart-stability"),
    path(
        "charts/stability-ranking/",
        chart_apis.StabilityRankingChartApi.as_view(),
        name="api-chart-stability-ranking",
    ),
    path("charts/radar/", chart_apis.RadarChartApi.as_view(), name="api-chart-radar"),
    path(
        "charts/trajectories/",
        chart_apis.TrajectoriesChartApi.as_view(),
        name="api-chart-trajectories",
    ),
    path("charts/tracks/", chart_apis.TracksChartApi.as_view(), name="api-chart-tracks"),
]
