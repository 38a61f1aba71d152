"""Two episodes side by side: one page, stepped together, the first different move marked."""

from __future__ import annotations

import json
import re

import pytest

from evaluation.replay_html import episode_views, first_different_move
from leaderboard.models import Episode, Run
from tests.leaderboard.factories import import_run, make_bundle

pytestmark = pytest.mark.django_db
SIZE = 32
SCENE = "male_0-mano_white-splash"


@pytest.fixture(autouse=True)
def _media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


def _scripted(tmp_path, name: str, answers: list[str]) -> Episode:
    script = tmp_path / f"{name}.json"
    script.write_text(json.dumps(answers))
    bundle = make_bundle(
        tmp_path / f"{name}.jsonl", f"scripted:{script}", scenes=SCENE, levels=(1,), image_size=SIZE
    )
    run = import_run(bundle, name, kind="baseline")
    return Episode.objects.get(run=run)


@pytest.fixture
def pair(tmp_path) -> tuple[Episode, Episode]:
    """Two scripted players of one task: the same two moves, then apart at the third."""
    a = _scripted(tmp_path, "Left first", ["Choice: [6]", "Choice: [6]", "Choice: [3]"])
    b = _scripted(tmp_path, "Right first", ["Choice: [6]", "Choice: [6]", "Choice: [4]"])
    return a, b


def _data(html: str) -> dict:
    found = re.search(r'<script id="compare-data" type="application/json">(.*?)</script>', html)
    assert found
    return json.loads(found.group(1))


def test_the_first_different_move_is_the_first_view_answered_otherwise():
    def steps(*options):
        return [{"index": i, "option": o, "hand_cell": [0, 0, 0]} for i, o in enumerate(options)]

    same = episode_views(steps(6, 6), [5, 4, 3])
    assert first_different_move(same, same) is None
    assert first_different_move(same, episode_views(steps(6, 3), [5, 4, 4])) == 1
    assert first_different_move(same, episode_views(steps(6), [5, 4])) == 1  # one has ended


def test_both_replays_are_on_one_page_with_the_difference_marked(client, pair):
    a, b = pair
    response = client.get(f"/episodes/compare/?a={a.pk}&b={b.pk}")
    assert response.status_code == 200
    html = response.content.decode()
    data = _data(html)
    assert data["firstDifference"] == 2
    assert len(data["a"]["views"]) == a.steps.count() + 1
    assert len(data["b"]["views"]) == b.steps.count() + 1
    assert "Their first different move is at step 3 (view 2)" in html
    assert html.count('class="line side-') == 2 and 'data-field="difference-line"' in html
    assert f'href="/episodes/{a.pk}/"' in html and f'href="/episodes/{b.pk}/"' in html


def test_a_replay_offers_the_same_task_of_other_listed_runs(client, pair):
    a, b = pair
    Run.objects.filter(pk__in=[a.run_id, b.run_id]).update(listed=True)
    html = client.get(f"/episodes/{a.pk}/").content.decode()
    assert 'action="/episodes/compare/"' in html
    assert f'<input type="hidden" name="a" value="{a.pk}">' in html
    assert f'<option value="{b.pk}">Right first' in html
    assert f'<option value="{a.pk}">' not in html


@pytest.mark.parametrize(
    ("query", "field"),
    [("b=1", "a"), ("a=1", "b"), ("a=x&b=1", "a"), ("a=1&b=2&step=-1", "step")],
)
def test_bad_addresses_are_400s_naming_the_field(client, query, field):
    response = client.get(f"/episodes/compare/?{query}")
    assert response.status_code == 400
    assert f"<code>{field}</code>" in response.content.decode()


def test_another_users_private_episode_cannot_be_compared(client, pair, alice, bob):
    a, b = pair
    Run.objects.filter(pk=b.run_id).update(visibility=Run.Visibility.PRIVATE, owner=alice)
    address = f"/episodes/compare/?a={a.pk}&b={b.pk}"
    assert client.get(address).status_code == 404
    client.force_login(bob)
    assert client.get(address).status_code == 404
    client.force_login(alice)
    assert client.get(address).status_code == 200


def test_the_compare_pages_scene_results_link_each_level_side_by_side(client, tmp_path):
    runs = {}
    for name, answers in (("Left first", ["Choice: [3]"]), ("Right first", ["Choice: [4]"])):
        script = tmp_path / f"{name}.json"
        script.write_text(json.dumps(answers))
        bundle = make_bundle(
            tmp_path / f"{name}.jsonl", f"scripted:{script}", scenes=SCENE, image_size=SIZE
        )
        runs[name] = import_run(bundle, name, kind="baseline")
    Run.objects.filter(pk__in=[r.pk for r in runs.values()]).update(listed=True)
    html = client.get("/compare/?m=left-first&m=right-first").content.decode()
    assert "Left first against Right first, scene by scene" in html
    for level in (0, 1, 2, 3):
        a, b = (Episode.objects.get(run=run, level=level).pk for run in runs.values())
        assert f'href="/episodes/compare/?a={a}&amp;b={b}"' in html
