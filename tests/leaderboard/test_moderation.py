"""What a moderator sees of a bundle that looks like a baseline's: the warnings on its review
page, the reason its approval as a model needs, the queue's scores, and no "partial" override
for a complete bundle."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from leaderboard.models import Submission
from leaderboard.submissions.selectors import submission_warnings
from tests.leaderboard.factories import import_run

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


def _published(client, owner, bundle: Path, **meta) -> Submission:
    client.force_login(owner)
    data = {"model_name": "Alice VLM", "kind": "open-weights", "params_b": "7", **meta}
    upload = io.BytesIO(bundle.read_bytes())
    upload.name = "results.jsonl"
    response = client.post("/api/submissions/", {**data, "bundle": upload})
    assert response.status_code == 201, response.content
    submission = Submission.objects.get(pk=response.json()["id"])
    assert client.post(f"/submissions/{submission.pk}/publish/").status_code == 302
    return submission


def test_a_random_bundle_uploaded_as_a_model_is_warned_of_and_needs_a_reason(
    client, alice, moderator, bundles
):
    # The random baseline evaluated here, as `make run` puts it on the board.
    import_run(bundles["random"], "Random", kind="baseline")
    submission = _published(client, alice, bundles["random"])

    warnings = submission_warnings(submission=submission)
    assert len(warnings) == 3, warnings
    assert warnings[0].startswith("The bundle's header names the agent 'random' (Random)")
    assert "moves are those of the Random baseline evaluated here in 264 of the 264" in warnings[1]
    assert "inside the Random baseline's 95% interval" in warnings[2]

    client.force_login(moderator)
    page = client.get(f"/submissions/{submission.pk}/").content.decode()
    assert 'id="baseline-warnings"' in page and "looks like a baseline" in page
    assert "needs a written reason in the note" in page
    # A complete bundle is listed when approved: no "partial" override to tick.
    assert 'name="allow_partial"' not in page
    # The queue shows its overall AVG and its episodes.
    avg = submission.run.scores.get(table="overall", track="overall").avg
    queue = client.get("/moderation/").content.decode()
    assert f"{avg:.3f}" in queue and ">264" in queue

    review = f"/submissions/{submission.pk}/review/"
    silent = client.post(review, {"decision": "approve"})
    assert silent.status_code == 400
    assert "needs a written reason" in silent.content.decode()
    assert Submission.objects.get(pk=submission.pk).review == Submission.Review.PENDING
    approved = client.post(review, {"decision": "approve", "note": "a demo entry"}, follow=True)
    assert "Approved: Alice VLM is on the board." in approved.content.decode()


def test_without_a_baseline_evaluated_here_the_header_alone_speaks(
    client, alice, moderator, bundles
):
    submission = _published(client, alice, bundles["oracle"], kind="proprietary", params_b="")
    assert submission_warnings(submission=submission) == [
        "The bundle's header names the agent 'oracle' (Oracle), a baseline that asks no model "
        "for its moves."
    ]
    client.force_login(moderator)
    review = f"/submissions/{submission.pk}/review/"
    refused = client.post(review, {"decision": "approve"})
    assert refused.status_code == 400 and 'id="id_note_error"' in refused.content.decode()
    assert client.post(review, {"decision": "approve", "note": "a sanity check"}).status_code == 302
