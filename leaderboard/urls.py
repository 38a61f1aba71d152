"""Routes of the leaderboard pages and CSV downloads."""

from django.urls import path, re_path

from leaderboard import views

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
    path("about/", views.about, name="about"),
    path("evaluate/", views.evaluate_page, name="evaluate"),
    path("leaderboard/overall.csv", views.leaderboard_csv, name="overall-csv"),
    re_path(r"^leaderboard/level-(?P<table>[0-3])\.csv$", views.leaderboard_csv, name="level-csv"),
    path("leaderboard/tracks.csv", views.tracks_csv, name="tracks-csv"),
]
