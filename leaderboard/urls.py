"""Routes of the leaderboard pages and CSV downloads."""

from django.urls import path, re_path

from leaderboard import pages
from leaderboard.accounts import views as accounts
from leaderboard.boards import views as boards
from leaderboard.cards import views as cards
from leaderboard.charts import views as charts
from leaderboard.frames import views as frames
from leaderboard.mirror_use import views as mirror_use
from leaderboard.play import views as play
from leaderboard.releases import views as releases
from leaderboard.replays import views as replays
from leaderboard.runs import views as runs
from leaderboard.search import views as search
from leaderboard.submissions import views as submissions

app_name = "leaderboard"

urlpatterns = [
    path("", boards.leaderboard_page, name="overall"),
    re_path(r"^levels/(?P<table>[0-3])/$", boards.leaderboard_page, name="level"),
    path("tracks/", boards.tracks, name="tracks"),
    path("mirror-use/", mirror_use.mirror_use_page, name="mirror-use"),
    path("mirror-use.csv", mirror_use.mirror_use_csv, name="mirror-use-csv"),
    path("models/<slug:slug>/", boards.model_page, name="model"),
    path("models/<slug:slug>/badge.svg", boards.model_badge_svg, name="model-badge"),
    path("models/<slug:slug>/card.png", cards.model_card_png, name="model-card"),
    path(
        "models/<slug:slug>/eval_results.yaml",
        boards.model_eval_results_yaml,
        name="model-eval-results",
    ),
    path("models/<slug:slug>/model-index.yaml", boards.model_index_yaml, name="model-index"),
    path("runs/<int:run_id>/", runs.run_page, name="run"),
    path("runs/<int:run_id>/progress.json", runs.run_progress_json, name="run-progress"),
    path("runs/<int:run_id>/cancel/", runs.run_cancel_view, name="run-cancel"),
    path(
        "runs/<int:run_id>/rerun-errored/",
        runs.run_rerun_errored_view,
        name="run-rerun-errored",
    ),
    path("runs/<int:run_id>/errors.csv", runs.run_errors_csv, name="run-errors"),
    path("runs/<int:run_id>/process.csv", mirror_use.run_process_csv, name="run-process"),
    path("runs/<int:run_id>/bundle.jsonl", runs.run_bundle_download, name="run-bundle"),
    path("runs/<int:run_id>/details.zip", runs.run_details_download, name="run-details"),
    path(
        "runs/<int:run_id>/details.parquet",
        runs.run_details_parquet,
        {"table": "episodes"},
        name="run-details-episodes",
    ),
    path(
        "runs/<int:run_id>/steps.parquet",
        runs.run_details_parquet,
        {"table": "steps"},
        name="run-details-steps",
    ),
    path("runs/<int:run_id>/run.toml", runs.run_config_download, name="run-config"),
    path("runs/<int:run_id>/eee.json", runs.run_eee_download, name="run-eee"),
    path(
        "runs/<int:run_id>/eee-instances.jsonl",
        runs.run_eee_instances_download,
        name="run-eee-instances",
    ),
    path("runs/<int:run_id>/card.png", cards.run_card_png, name="run-card"),
    path("runs/<int:run_id>/behaviour.csv", replays.run_behaviour_csv, name="run-behaviour"),
    path("episodes/compare/", replays.episode_compare_page, name="episode-compare"),
    path("episodes/<int:episode_id>/", replays.episode_page, name="episode"),
    path("episodes/<int:episode_id>/card.png", cards.episode_card_png, name="episode-card"),
    path(
        "episodes/<int:episode_id>/prompt.txt",
        replays.episode_prompt_text,
        name="episode-prompt",
    ),
    path(
        "episodes/<int:episode_id>/export.html",
        replays.episode_export_html,
        name="episode-export",
    ),
    path(
        "episodes/<int:episode_id>/animation.webp",
        replays.episode_animation,
        {"fmt": "webp"},
        name="episode-animation",
    ),
    path(
        "episodes/<int:episode_id>/animation.gif",
        replays.episode_animation,
        {"fmt": "gif"},
        name="episode-animation-gif",
    ),
    re_path(
        r"^frames/(?P<key>[0-9a-f]{40})\.(?P<variant>png|webp|thumb\.webp)$",
        frames.frame_file,
        name="frame",
    ),
    path("search/", search.search_page, name="search"),
    path("scenes/", replays.scenes_page, name="scenes"),
    path("scenes/<str:scene_id>/", replays.scene_page, name="scene"),
    path("accounts/signup/", accounts.signup, name="signup"),
    path("accounts/profile/", accounts.profile, name="profile"),
    path("accounts/confirm/<str:token>/", accounts.email_confirm_view, name="email-confirm"),
    path("accounts/confirm-again/", accounts.email_confirm_again, name="email-confirm-again"),
    path("accounts/tokens/", accounts.token_create, name="token-create"),
    path(
        "accounts/tokens/<int:token_id>/revoke/",
        accounts.token_revoke,
        name="token-revoke",
    ),
    path("submit/", submissions.submit, name="submit"),
    path("submissions/<int:submission_id>/", submissions.submission_page, name="submission"),
    path(
        "submissions/<int:submission_id>/publish/",
        submissions.submission_publish_view,
        name="submission-publish",
    ),
    path(
        "submissions/<int:submission_id>/review/",
        submissions.submission_review_view,
        name="submission-review",
    ),
    path("moderation/", submissions.moderation, name="moderation"),
    path("about/", pages.about, name="about"),
    path("play/", play.play_page, name="play"),
    path("play/start/", play.play_start_view, name="play-start"),
    path("play/submit/", play.play_submit_view, name="play-submit"),
    re_path(
        r"^play/(?P<ref>e[0-9]{1,18}|p[0-9a-f]{32})/$",
        play.play_state_view,
        name="play-state",
    ),
    re_path(
        r"^play/(?P<ref>e[0-9]{1,18}|p[0-9a-f]{32})/answer/$",
        play.play_answer_view,
        name="play-answer",
    ),
    path("charts/", charts.charts_page, name="charts"),
    path("charts/cost.csv", charts.cost_csv, name="charts-cost-csv"),
    path("compare/", charts.compare_page, name="compare"),
    path("evaluate/", runs.evaluate_page, name="evaluate"),
    path("evaluate/estimate.json", runs.evaluate_estimate_json, name="evaluate-estimate"),
    path("leaderboard/overall.csv", boards.leaderboard_csv, name="overall-csv"),
    re_path(r"^leaderboard/level-(?P<table>[0-3])\.csv$", boards.leaderboard_csv, name="level-csv"),
    path("leaderboard/tracks.csv", boards.tracks_csv, name="tracks-csv"),
    re_path(
        r"^leaderboard/(?P<name>overall|level-[0-3])\.(?P<fmt>parquet|json)$",
        boards.leaderboard_export,
        name="board-export",
    ),
    path("releases/", releases.releases_page, name="releases"),
    re_path(r"^releases/(?P<version>[0-9.]{1,40})\.zip$", releases.release_zip, name="release-zip"),
    re_path(
        r"^releases/(?P<version>[0-9.]{1,40})/(?P<name>[A-Za-z0-9_./-]{1,200})$",
        releases.release_file,
        name="release-file",
    ),
]
