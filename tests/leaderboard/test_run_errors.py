"""Errored episodes on the site: counted by category on the run page, in the API and the CSV,
holding a run off the rankings above the set share, and re-run by the run's owner."""

from __future__ import annotations

import csv
import io

import pytest

from evaluation.config import RunConfig
from evaluation.errors import REFUSAL_PREFIX
from leaderboard.boards.scores import run_list_if_complete, run_scores_refresh
from leaderboard.models import Episode, Run, RunSecret, Step
from tests.leaderboard.factories import import_run

pytestmark = pytest.mark.django_db

ERRORS = {
    "server_error": ("[server_error HTTP 503] transport error after 6 attempts", 503),
    "timeout": ("[timeout] transport error after 6 attempts: Request timed out.", None),
    "rate_limited": ("[rate_limited HTTP 429] transport error after 6 attempts", 429),
}


def _errored_run(bundle, owner=None, *, errored=3, agent="random"):
    """A random run of 264 episodes, ``errored`` of them ended by the provider, the rest
    scored; a config as a run evaluated here has, and ``owner``."""
    run = import_run(bundle, "Flaky VLM")
    episodes = list(run.episodes.order_by("level", "scene_id").values_list("pk", flat=True))
    kinds = list(ERRORS)
    for i, pk in enumerate(episodes[:errored]):
        text, status = ERRORS[kinds[i % len(kinds)]]
        Episode.objects.filter(pk=pk).update(
            status=Episode.Status.ERROR,
            error=text,
            error_status=status,
            error_category=kinds[i % len(kinds)],
            **dict.fromkeys(("tsr", "sir", "fcr", "pcr", "avg")),
        )
    Step.objects.filter(episode_id=episodes[-1], index__in=(0, 1)).update(
        parse_error=REFUSAL_PREFIX + "refusal", option=None
    )
    Run.objects.filter(pk=run.pk).update(
        owner=owner, listed=False, spec=RunConfig(agent=agent).as_dict()
    )
    run.refresh_from_db()
    run_scores_refresh(run=run, n_resamples=10)
    run_list_if_complete(run=run)
    run.refresh_from_db()
    return run


def test_a_few_errored_episodes_are_counted_apart_and_the_run_is_still_ranked(client, bundles):
    run = _errored_run(bundles["random"], errored=3)
    assert run.listed  # 3 of 264 (1.1%) is within the default 2%
    assert run.scores.get(table="overall", track="overall").episodes == 261

    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert "Errored episodes" in page
    assert "3</strong> of 264 finished episodes ended in error (1.1%)" in page
    for label in ("Server error (HTTP 5xx)", "Timed out after every retry", "Rate limited"):
        assert label in page
    assert "left out of every score" in page and "Not ranked" not in page
    assert "Refused to answer <strong>2</strong>" in page

    api = client.get(f"/api/runs/{run.pk}/").json()["error_counts"]
    assert api == {
        "episodes": 264,
        "errored": 3,
        "errored_share": round(3 / 264, 3),  # the API gives 3 decimals
        "by_category": {"rate_limited": 1, "server_error": 1, "timeout": 1},
        "refused_steps": {"refusal": 2},
        "ranking_held": False,
    }

    response = client.get(f"/runs/{run.pk}/errors.csv")
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    by_kind = {(r["what"], r["kind"]): r for r in rows}
    assert by_kind[("episodes", "errored")]["count"] == "3"
    assert by_kind[("errored_episodes", "timeout")]["count"] == "1"
    assert by_kind[("refused_steps", "refusal")]["count"] == "2"


def test_a_run_over_the_errored_share_is_not_ranked_until_its_errors_are_re_run(
    client, bundles, alice, charlie
):
    run = _errored_run(bundles["random"], owner=alice, errored=6)  # 2.3%
    assert not run.listed
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert "Not ranked: more than 2.0% of its episodes ended in error" in page
    assert "Re-run the errored episodes" not in page  # only for its owner
    api = client.get(f"/api/runs/{run.pk}/").json()
    assert api["error_counts"]["ranking_held"] and not api["listed"]

    client.force_login(charlie)
    assert client.post(f"/runs/{run.pk}/rerun-errored/").status_code == 404
    client.force_login(alice)
    assert "Re-run the errored episodes" in client.get(f"/runs/{run.pk}/").content.decode()
    response = client.post(f"/runs/{run.pk}/rerun-errored/")
    assert response.status_code == 302
    run.refresh_from_db()
    assert run.status == Run.Status.PENDING and run.finished is None
    again = run.episodes.filter(status=Episode.Status.PENDING)
    assert again.count() == 6 and not Step.objects.filter(episode__in=again).exists()
    assert not again.exclude(error="").exists() and not again.exclude(avg=None).exists()
    assert run.episodes.filter(status=Episode.Status.COMPLETED).count() == 258

    # Asked twice: nothing more happens.
    response = client.post(f"/runs/{run.pk}/rerun-errored/", follow=True)
    assert "has no errored episode to re-run, or is re-running them" in response.content.decode()
    assert run.episodes.filter(status=Episode.Status.PENDING).count() == 6


def test_a_hosted_model_run_needs_its_key_again_and_an_uploaded_run_cannot_be_re_run(
    client, bundles, alice, settings
):
    run = _errored_run(bundles["random"], owner=alice, errored=6, agent="openai:gpt-fake")
    client.force_login(alice)
    response = client.post(f"/runs/{run.pk}/rerun-errored/", {"api_key": ""})
    assert response.status_code == 400
    assert "<code>api_key</code>: this run&#x27;s API key was erased" in response.content.decode()
    run.refresh_from_db()
    assert run.status == Run.Status.COMPLETED

    response = client.post(f"/runs/{run.pk}/rerun-errored/", {"api_key": "sk-again"})
    assert response.status_code == 302
    assert RunSecret.objects.filter(run=run).exists()

    uploaded = _errored_run(bundles["random"], owner=alice, errored=6)
    Run.objects.filter(pk=uploaded.pk).update(source=Run.Source.VERIFIED)
    response = client.post(f"/runs/{uploaded.pk}/rerun-errored/")
    assert response.status_code == 400
    assert "run: only a run evaluated on this site can be re-run" in response.content.decode()


def test_the_errored_share_is_a_setting(bundles, settings):
    settings.MIRRORBENCH_MAX_ERRORED_SHARE = 0.0
    assert not _errored_run(bundles["random"], errored=1).listed
