"""Routes of the leaderboard pages and CSV downloads."""

from django.urls import path, re_path

from leaderboard import chart_views, play_views, replay_views, submission_views, views

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
    path("accounts/signup/", submission_views.signup, name="signup"),
    path("accounts/profile/", submission_views.profile, name="profile"),
    path(
        "accounts/confirm/<str:token>/", submission_views.email_confirm_view, name="email-confirm"
    ),
    path(
        "accounts/confirm-again/", submission_views.email_confirm_again, name="email-confirm-again"
    ),
    path("accounts/tokens/", submission_views.token_create, name="token-create"),
    path(
        "accounts/tokens/<int:token_id>/revoke/",
        submission_views.token_revoke,
        name="token-revoke",
    ),
    path("submit/", submission_views.submit, name="submit"),
    path("submissions/<int:submission_id>/", submission_views.submission_page, name="submission"),
    path(
        "submissions/<int:submission_id>/publish/",
        submission_views.submission_publish_view,
        name="submission-publish",
    ),
    path(
        "submissions/<int:submission_id>/review/",
        submission_views.submission_review_view,
        name="submission-review",
    ),
    path("moderation/", submission_views.moderation, name="moderation"),
    path("about/", views.about, name="about"),
    path("play/", play_views.play_page, name="play"),
    path("play/start/", play_views.play_start_view, name="play-start"),
    path("play/submit/", play_views.play_submit_view, name="play-submit"),
    re_path(
        r"^play/(?P<ref>e[0-9]{1,18}|p[0-9a-f]{32})/$",
        play_views.play_state_view,
        name="play-state",
    ),
    re_path(
        r"^play/(?P<ref>e[0-9]{1,18}|p[0-9a-f]{32})/answer/$",
        play_views.play_answer_view,
        name="play-answer",
    ),
    path("charts/", chart_views.charts_page, name="charts"),
    path("compare/", chart_views.compare_page, name="compare"),
    path("evaluate/", views.evaluate_page, name="evaluate"),
    path("evaluate/estimate.json", views.evaluate_estimate_json, name="evaluate-estimate"),
    path("leaderboard/overall.csv", views.leaderboard_csv, name="overall-csv"),
    re_path(r"^leaderboard/level-(?P<table>[0-3])\.csv$", views.leaderboard_csv, name="level-csv"),
    path("leaderboard/tracks.csv", views.tracks_csv, name="tracks-csv"),
]
