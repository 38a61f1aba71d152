"""Routes of the leaderboard pages and CSV downloads."""

from django.urls import path, re_path

from leaderboard import chart_views, replay_views, views

app_name = "leaderboard"

urlpatterns = [
    path("", views.leaderboard_page, name="overall"),
    re_path(r"^levels/(?P<table>[0-3])/$", views.leaderboard_page, name="level"),
    path("tracks/", views.tracks, name="tracks"),
    path("models/<slug:slug>/", views.model_page, name="model"),
    path("runs/<int:run_id>/", views.run_page, name="run"),
    path("runs/<int:run_id>/progress.json", views.run_progress_json, name="run-progress"),
    path("runs/<int:run_id>/cancel/", views.run_cancel_view, name="run-cancel"),
    path("runs/<int:run_id>/bundle.jsonl", views.run_bundle_download, name="run-bundle"),
    path("runs/<int:run_id>/behaviour.csv", replay_views.run_behaviour_csv, name="run-behaviour"),
    path("episodes/<int:episode_id>/", replay_views.episode_page, name="episode"),
    path(
        "episodes/<int:episode_id>/prompt.txt",
        replay_views.episode_prompt_text,
        name="episode-prompt",
    ),
    re_path(
        r"^frames/(?P<key>[0-9a-f]{40})\.(?P<variant>png|webp|thumb\.webp)$",
        replay_views.frame_file,
        name="frame",
    ),
    path("scenes/", replay_views.scenes_page, name="scenes"),
    path("scenes/<str:scene_id>/", replay_views.scene_page, name="scene"),
    path("about/", views.about, name="about"),
    path("charts/", chart_views.charts_page, name="charts"),
    path("compare/", chart_views.compare_page, name="compare"),
    path("evaluate/", views.evaluate_page, name="evaluate"),
    path("leaderboard/overall.csv", views.leaderboard_csv, name="overall-csv"),
    re_path(r"^leaderboard/level-(?P<table>[0-3])\.csv$", views.leaderboard_csv, name="level-csv"),
    path("leaderboard/tracks.csv", views.tracks_csv, name="tracks-csv"),
]
