"""The run page of a server run: progress, its JSON, cancelling, who sees what."""

import pytest

from evaluation.config import RunConfig
from leaderboard.models import Episode, ModelEntry, Run
from leaderboard.runs.services import run_create
from tests.leaderboard.factories import ModelEntryFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def running_run(alice, django_capture_on_commit_callbacks):
    """Alice's run of the oracle, one episode done."""
    entry = ModelEntryFactory(name="Oracle", kind=ModelEntry.Kind.BASELINE)
    with django_capture_on_commit_callbacks(execute=False):
        run = run_create(
            model_entry=entry,
            config=RunConfig(agent="oracle", scenes="robot", levels=(0,)),
            owner=alice,
        )
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING)
    first = Episode.objects.select_related("scene").filter(run=run).first()
    d0 = first.scene.d0_steps
    Episode.objects.filter(pk=first.pk).update(
        status=Episode.Status.COMPLETED, distances=list(range(d0, 0, -1)), success=True
    )
    return Run.objects.get(pk=run.pk)


def test_the_run_page_shows_live_progress(client, running_run):
    content = client.get(f"/runs/{running_run.pk}/").content.decode()
    assert f'data-url="/runs/{running_run.pk}/progress.json"' in content
    assert "of 18 episodes" in content and "<progress" in content
    assert "Overall AVG so far" in content and 'data-level="0"' in content


def test_the_progress_json_counts_episodes_steps_and_bad_responses(client, running_run):
    data = client.get(f"/runs/{running_run.pk}/progress.json").json()
    assert data["status"] == "running"
    assert data["episodes_total"] == 18 and data["episodes_done"] == 1
    assert set(data) >= {"steps", "bad", "episodes_error", "eta_s", "input_tokens", "avg_by_level"}


def test_only_the_owner_or_a_moderator_sees_the_cancel_button_and_can_cancel(
    client, running_run, alice, bob, charlie, moderator
):
    assert "Cancel this run" not in client.get(f"/runs/{running_run.pk}/").content.decode()
    # A collaborator who may start runs and an outsider: neither owns it.
    for other in (bob, charlie):
        client.force_login(other)
        assert "Cancel this run" not in client.get(f"/runs/{running_run.pk}/").content.decode()
        assert client.post(f"/runs/{running_run.pk}/cancel/").status_code == 404, other
        assert Run.objects.get(pk=running_run.pk).status == "running"
    # A moderator may (a runaway run, an abusive endpoint); the owner too (test_access).
    client.force_login(moderator)
    assert "Cancel this run" in client.get(f"/runs/{running_run.pk}/").content.decode()
    client.force_login(alice)
    assert "Cancel this run" in client.get(f"/runs/{running_run.pk}/").content.decode()
    response = client.post(f"/runs/{running_run.pk}/cancel/", follow=True)
    assert response.redirect_chain == [(f"/runs/{running_run.pk}/", 302)]
    assert Run.objects.get(pk=running_run.pk).status == "cancelled"
    said = f"Run {running_run.pk} cancelled: episodes in flight stop at their next step."
    assert [str(m) for m in response.context["messages"]] == [said]
    again = client.post(f"/runs/{running_run.pk}/cancel/", follow=True)
    assert [str(m) for m in again.context["messages"]] == [
        f"Run {running_run.pk} had already ended: nothing to cancel."
    ]


def test_cancelling_needs_a_signed_in_post(client, running_run):
    assert client.get(f"/runs/{running_run.pk}/cancel/").status_code == 405
    response = client.post(f"/runs/{running_run.pk}/cancel/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_a_private_run_is_seen_by_its_owner_only(
    client, running_run, alice, bob, charlie, moderator
):
    Run.objects.filter(pk=running_run.pk).update(visibility=Run.Visibility.PRIVATE)
    assert client.get(f"/runs/{running_run.pk}/").status_code == 404
    assert client.get(f"/runs/{running_run.pk}/progress.json").status_code == 404
    # A collaborator with the same permission as alice, an outsider, a moderator (on the site).
    for other in (bob, charlie, moderator):
        client.force_login(other)
        assert client.get(f"/runs/{running_run.pk}/").status_code == 404, other
        assert client.get(f"/runs/{running_run.pk}/progress.json").status_code == 404, other
    client.force_login(alice)
    assert client.get(f"/runs/{running_run.pk}/").status_code == 200


def test_a_finished_run_offers_its_bundle_which_verifies(
    client, tmp_path, django_capture_on_commit_callbacks
):
    from evaluation.bundle import read_bundle
    from evaluation.verify import verify_bundle
    from leaderboard.runs.services import run_start
    from leaderboard.worker import episode_evaluate

    entry = ModelEntryFactory(name="Oracle", kind=ModelEntry.Kind.BASELINE)
    with django_capture_on_commit_callbacks(execute=False):
        run = run_create(
            model_entry=entry, config=RunConfig(agent="oracle", scenes="robot", levels=(2,))
        )
        for episode_id in run_start(run_id=run.pk):
            episode_evaluate(episode_id=episode_id)
    assert Run.objects.get(pk=run.pk).status == "completed"
    assert "Download the results bundle" in client.get(f"/runs/{run.pk}/").content.decode()
    response = client.get(f"/runs/{run.pk}/bundle.jsonl")
    assert response.status_code == 200
    path = tmp_path / "run.jsonl"
    path.write_bytes(response.content)
    assert verify_bundle(read_bundle(path)) == []


def test_the_cost_is_shown_when_a_price_is_configured(client, running_run, settings):
    from leaderboard.models import Step

    episode = Episode.objects.filter(run=running_run).first()
    Step.objects.create(
        episode=episode,
        index=0,
        response="Choice: [6]",
        option=6,
        executed=True,
        distance_steps=5,
        hand_cell=[-1, 0, 0],
        input_tokens=1_000_000,
        output_tokens=100_000,
    )
    assert client.get(f"/runs/{running_run.pk}/progress.json").json()["cost_usd"] is None
    settings.MIRRORBENCH_PRICES = {"oracle": {"input_per_mtok": 2.5, "output_per_mtok": 10.0}}
    data = client.get(f"/runs/{running_run.pk}/progress.json").json()
    assert data["cost_usd"] == 3.5 and data["input_tokens"] == 1_000_000
    assert "about $<span" in client.get(f"/runs/{running_run.pk}/").content.decode()


def test_the_cost_leaves_out_the_steps_answered_from_the_cache(client, running_run, settings):
    from leaderboard.models import Step

    episode = Episode.objects.filter(run=running_run).first()
    common = {"option": 6, "executed": True, "distance_steps": 5, "hand_cell": [-1, 0, 0]}
    Step.objects.create(
        episode=episode, index=0, input_tokens=1_000_000, output_tokens=100_000, **common
    )
    # Replayed from an earlier run's answer: those tokens were paid for then.
    Step.objects.create(
        episode=episode,
        index=1,
        input_tokens=1_000_000,
        output_tokens=100_000,
        cached=True,
        **common,
    )
    settings.MIRRORBENCH_PRICES = {"oracle": {"input_per_mtok": 2.5, "output_per_mtok": 10.0}}
    data = client.get(f"/runs/{running_run.pk}/progress.json").json()
    assert data["steps"] == 2 and data["cached_steps"] == 1
    assert data["input_tokens"] == 1_000_000 and data["output_tokens"] == 100_000
    assert data["cost_usd"] == 3.5


def test_a_hosted_run_bundle_downloads_without_any_provider_key(
    client, tmp_path, monkeypatch, django_capture_on_commit_callbacks
):
    """The export is built from stored data: no client, no key in the web process."""
    from evaluation.bundle import read_bundle
    from evaluation.metrics import episode_score
    from evaluation.verify import verify_bundle
    from leaderboard.models import Step

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    entry = ModelEntryFactory(kind=ModelEntry.Kind.PROPRIETARY)
    with django_capture_on_commit_callbacks(execute=False):
        run = run_create(
            model_entry=entry,
            config=RunConfig(
                agent="openai:some-model", scenes="tienkung-allegro-logo_0", levels=(1,)
            ),
        )
    episode = run.episodes.get()
    for index in range(15):
        Step.objects.create(
            episode=episode,
            index=index,
            response="Thinking.\nChoice: [1]",
            option=1,
            executed=True,
            distance_steps=6 + index + 1,
            hand_cell=[0, 0, index + 1],
        )
    score = episode_score(list(range(6, 22)))
    Episode.objects.filter(pk=episode.pk).update(
        status="completed",
        distances=list(range(6, 22)),
        steps_taken=15,
        **{m: getattr(score, m) for m in ("tsr", "sir", "fcr", "pcr", "avg")},
    )
    Run.objects.filter(pk=run.pk).update(status="completed")
    response = client.get(f"/runs/{run.pk}/bundle.jsonl")
    assert response.status_code == 200
    path = tmp_path / "run.jsonl"
    path.write_bytes(response.content)
    bundle = read_bundle(path)
    assert bundle.header["agent"]["name"] == "openai:some-model"
    assert bundle.header["model"] == {"provider": "openai", "model": "some-model", "base_url": None}
    assert bundle.header["tool"]["run"] == run.pk
    assert verify_bundle(bundle) == []


def test_an_uploaded_run_offers_its_bundle_as_uploaded(client, tmp_path, bundles):
    from evaluation.bundle import read_bundle
    from evaluation.verify import verify_bundle
    from tests.leaderboard.factories import import_run

    run = import_run(bundles["oracle"], "Uploaded", source=Run.Source.VERIFIED)
    response = client.get(f"/runs/{run.pk}/bundle.jsonl")
    assert response.status_code == 200
    path = tmp_path / "uploaded.jsonl"
    path.write_bytes(response.content)
    exported = read_bundle(path)
    original = read_bundle(bundles["oracle"])
    assert verify_bundle(exported) == []
    assert exported.header["created"] == original.header["created"]
    assert len(exported.episodes) == 264


def test_the_progress_json_brings_the_pages_unfinished_cards_as_the_page_shows_them(
    client, running_run
):
    done, moving, waiting = Episode.objects.filter(run=running_run).order_by("pk")[:3]
    Episode.objects.filter(pk=moving.pk).update(status=Episode.Status.RUNNING, steps_taken=7)
    ids = f"{done.pk},{moving.pk},{waiting.pk},x,99999999"  # junk and others' ids: left out
    data = client.get(f"/runs/{running_run.pk}/progress.json?episodes={ids}").json()
    assert data["status_label"] == "Running"
    cards = data["cards"]
    assert set(cards) == {str(done.pk), str(moving.pk), str(waiting.pk)}
    assert f'data-episode="{done.pk}" data-final>' in cards[str(done.pk)]
    assert "reached the mark" in cards[str(done.pk)]
    assert 'class="episode-card outcome-pending"' in cards[str(moving.pk)]
    assert "7 steps" in cards[str(moving.pk)] and "Running" in cards[str(moving.pk)]
    assert "0 steps" in cards[str(waiting.pk)] and "Pending" in cards[str(waiting.pk)]
    # A scene id breaks after its _ and - only; a thumbnail not rendered yet is a placeholder
    # that the page fills once loaded: it never holds the page up.
    title = cards[str(done.pk)].split('class="title"><code>')[1].split("</code>")[0]
    assert "<wbr>" in title and title.replace("<wbr>", "") == done.scene.scene_id
    assert 'src="/static/img/frame-pending.svg" data-frame="/frames/' in cards[str(done.pk)]
    page = client.get(f"/runs/{running_run.pk}/").content.decode()
    assert cards[str(moving.pk)].strip() in page  # one template for both
    assert "cards" not in client.get(f"/runs/{running_run.pk}/progress.json").json()
