"""The reproduction spot-check: the server re-runs a sample of a submission's episodes with the
model it names (a fake OpenAI-compatible server on loopback) and compares them step by step."""

from __future__ import annotations

import io

import pytest

from evaluation.cli import main
from evaluation.outbound import ALLOW_PRIVATE_ENV
from leaderboard.models import Run, Submission
from leaderboard.runs.services import run_start
from leaderboard.worker import episode_evaluate
from tests.evaluation.fake_providers import FakeOpenAI, Scripted, openai_completion

pytestmark = pytest.mark.django_db
SCENES = "GR1_T2-allegro-logo_0,tienkung-allegro-logo_0"


@pytest.fixture(scope="module")
def _environment():
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_API_KEY", "sk-test")
        patch.setenv(ALLOW_PRIVATE_ENV, "1")  # the worker's own switch: the fake is loopback
        yield


@pytest.fixture(scope="module")
def _server(_environment):
    with FakeOpenAI() as server:
        yield server


@pytest.fixture(scope="module")
def bundle(_server, tmp_path_factory) -> bytes:
    """A bundle played by the fake model (it always answers option 2), 4 episodes, 32 px."""
    out = tmp_path_factory.mktemp("repro") / "fake.jsonl"
    argv = ["run", "--agent", "openai:fake-vlm", "--base-url", _server.base_url]
    argv += ["--scenes", SCENES, "--levels", "0,3", "--image-size", "32", "--no-cache"]
    assert main([*argv, "--out", str(out)]) == 0
    return out.read_bytes()


@pytest.fixture(autouse=True)
def _small_frames_served(settings):
    """The fake model's bundles are 32 px: let this site show frames of that size."""
    settings.MIRRORBENCH_IMAGE_SIZES = [1024, 32]


@pytest.fixture
def fake(_server, _environment):
    """The fake model, with no request recorded and nothing queued."""
    _server.requests.clear()
    _server._queue.clear()
    yield _server
    _server._queue.clear()


def _upload(client, content: bytes, **fields):
    data = {"model_name": "Fake VLM", "kind": "open-weights", **fields}
    data["bundle"] = io.BytesIO(content)
    data["bundle"].name = "b.jsonl"
    return client.post("/api/submissions/", data)


def _replay(run: Run) -> None:
    """Play the re-run's episodes as a worker would."""
    for episode_id in run_start(run_id=run.pk):
        assert episode_evaluate(episode_id=episode_id) == "completed"


@pytest.fixture
def allowed(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.MIRRORBENCH_ALLOW_PRIVATE_ENDPOINTS = True
    settings.MIRRORBENCH_REPRODUCE_SAMPLE = 3


def _reproduce_fields(fake) -> dict[str, str]:
    return {
        "reproduce_provider": "openai",
        "reproduce_model": "fake-vlm",
        "reproduce_base_url": fake.base_url,
        "reproduce_api_key": "sk-rerun",
    }


def test_a_faithful_model_reproduces_its_bundle(client, alice, fake, bundle, allowed):
    client.force_login(alice)
    response = _upload(client, bundle, **_reproduce_fields(fake))
    assert response.status_code == 201, response.content
    submission = Submission.objects.get()
    rerun = submission.reproduction_run
    assert rerun is not None and rerun.episodes.count() == 3
    assert rerun.visibility == Run.Visibility.PRIVATE and rerun.owner == alice
    assert rerun.agent == "openai:fake-vlm" and rerun.spec["image_size"] == 32
    _replay(rerun)
    # The key went to the provider and was erased when the re-run ended.
    assert fake.requests and fake.requests[0].headers["authorization"] == "Bearer sk-rerun"
    assert not hasattr(Run.objects.get(pk=rerun.pk), "secret")
    submission.refresh_from_db()
    report = submission.reproduction
    assert report["sampled"] == report["completed"] == 3
    assert report["step_agreement"] == 1.0 and report["identical_episodes"] == 3
    assert report["mean_abs_avg_difference"] == 0.0
    page = client.get(f"/submissions/{submission.pk}/").content.decode()
    assert "reproduced" in page and "100% of the submitted steps" in page


def test_a_model_that_answers_otherwise_shows_where_it_differs(
    client, alice, fake, bundle, allowed
):
    client.force_login(alice)
    assert _upload(client, bundle, **_reproduce_fields(fake)).status_code == 201
    submission = Submission.objects.get()
    other = Scripted(200, openai_completion("Choice: [1]"))
    fake.enqueue(*[other] * 200)
    _replay(submission.reproduction_run)
    submission.refresh_from_db()
    report = submission.reproduction
    assert report["identical_episodes"] == 0 and report["step_agreement"] < 0.5
    assert all(e["first_difference"] == 0 for e in report["episodes"])


def test_an_endpoint_the_server_may_not_call_is_refused_and_nothing_is_stored(
    client, alice, fake, bundle, settings, tmp_path
):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.MIRRORBENCH_ALLOW_PRIVATE_ENDPOINTS = False
    client.force_login(alice)
    response = _upload(client, bundle, **_reproduce_fields(fake))
    assert response.status_code == 400
    assert "reproduce_base_url" in response.json(), response.json()
    assert not Submission.objects.exists() and not Run.objects.exists()
    half = _upload(client, bundle, reproduce_provider="openai")
    assert half.status_code == 400 and "reproduce_model" in half.json()


def test_a_reproduction_endpoint_on_a_non_standard_port_is_refused(
    client, alice, bundle, settings, tmp_path, monkeypatch
):
    import socket

    real = socket.getaddrinfo

    def getaddrinfo(host, *args, **kwargs):
        if host == "models.example.org":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("8.8.8.8", 443))]
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.MIRRORBENCH_ALLOW_PRIVATE_ENDPOINTS = False
    client.force_login(alice)
    fields = {
        "reproduce_provider": "openai",
        "reproduce_model": "fake-vlm",
        "reproduce_base_url": "https://models.example.org:2375/v1",
        "reproduce_api_key": "sk-rerun",
    }
    response = _upload(client, bundle, **fields)
    assert response.status_code == 400
    assert "standard port" in str(response.json().get("reproduce_base_url")), response.json()
    assert not Submission.objects.exists() and not Run.objects.exists()
