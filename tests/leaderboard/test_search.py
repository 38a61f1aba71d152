"""Search across every public response: the query language, the index, filters, escaping,
who sees what, and the same results on SQLite and on a real PostgreSQL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import TestCase

from leaderboard.models import Step
from leaderboard.search.index import FTS_TABLE, step_search_index_ensure
from leaderboard.search.query import (
    QueryError,
    highlight,
    parse_query,
    postgres_tsquery,
    sqlite_match,
)
from leaderboard.search.selectors import step_search
from tests.leaderboard.postgres import postgres_or_missing
from tests.leaderboard.search_corpus import (
    QUERIES,
    STEPS,
    WAYS,
    corpus_build,
    corpus_results,
    corpus_results_every_way,
)

ROOT = Path(__file__).resolve().parents[2]


def test_the_query_language_compiles_alike_for_both_databases():
    query = parse_query('Mirror "my own  hand" mirr* -left -"turn right"')
    assert sqlite_match(query) == (
        '("mirror" AND "my own hand" AND "mirr"*) NOT ("left" OR "turn right")'
    )
    assert (
        postgres_tsquery(query)
        == "mirror & (my <-> own <-> hand) & mirr:* & !left & !(turn <-> right)"
    )
    # Nothing a visitor types reaches either syntax: only letters and digits are kept.
    odd = parse_query("a'); DROP TABLE x; -- NEAR(b) | !c & d:")
    assert postgres_tsquery(odd) == "a & drop & table & x & (near <-> b) & c & d"
    assert sqlite_match(odd) == '"a" AND "drop" AND "table" AND "x" AND "near b" AND "c" AND "d"'


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('"my own hand', "quote is not closed"),
        ("-left", "exclusions"),
        ("m*", "prefix is one word"),
        ("mi*r", '"*" goes once at the end'),
        ('"mirr*"', '"*" ends a word outside quotes'),
        ("x" * 201, "at most 200 characters"),
        ("a b c d e f g h i", "at most 8 terms"),
    ],
)
def test_a_query_the_language_does_not_allow_says_why(text, says):
    with pytest.raises(QueryError, match=says):
        parse_query(text)


def test_the_excerpt_marks_the_words_matched_around_the_first_hit():
    query = parse_query('"own hand" mirr*')
    parts = highlight("I see my own hand in the mirror; my hand again", query)
    assert [p.text for p in parts if p.hit] == ["own", "hand", "mirror"]
    assert "".join(p.text for p in parts) == "I see my own hand in the mirror; my hand again"
    long = highlight("word " * 200 + "mirror" + " tail" * 200, parse_query("mirror"), width=60)
    assert long[0].text == "…" and long[-1].text == "…"
    assert sum(len(p.text) for p in long) < 70 and any(p.hit for p in long)


class SearchOnTheEmbeddedDatabase(TestCase):
    """The corpus of ``search_corpus`` in SQLite (FTS5), built once for the class."""

    @classmethod
    def setUpTestData(cls) -> None:
        cls.steps = corpus_build()
        cls.dana = get_user_model().objects.get(username="dana")
        cls.outsider = get_user_model().objects.create_user("erin", "e@example.org", "x-pass-x")

    def test_each_query_finds_the_public_steps_it_should_newest_first(self):
        assert corpus_results() == [expected for _, _, expected in QUERIES]

    def test_narrow_and_wide_filters_find_the_same_steps_in_the_same_order(self):
        expected = [expected for _, _, expected in QUERIES]
        found = corpus_results_every_way()
        assert set(found) == {*WAYS, *(f"{way}, paged" for way in WAYS)}
        for way, results in found.items():
            assert results == expected, way

    def test_a_result_links_to_its_step_with_the_words_marked_and_markup_escaped(self):
        html = self.client.get("/search/", {"q": "script hand"}).content.decode()
        step = self.steps["markup"]
        assert f'href="/episodes/{step.episode_id}/?step=0"' in html
        assert "<mark>script</mark>" in html and "<mark>hand</mark>" in html
        assert "&lt;<mark>script</mark>&gt;alert(&#x27;x&#x27;)" in html
        assert "<script>alert" not in html and "<b>hand" not in html

    def test_a_stored_frame_shows_its_thumbnail_and_another_a_placeholder(self):
        # The model choices; the filters' episodes, their steps' id ranges, the page's ids in
        # the one range; the steps, their frames.
        with self.assertNumQueries(6):
            html = self.client.get("/search/", {"q": "mirror"}).content.decode()
        assert f"/frames/{'f' * 40}.thumb.webp" in html
        assert html.count("frame not rendered yet") == 2

    def test_filters_are_offered_and_a_bad_one_is_a_400_naming_it(self):
        html = self.client.get("/search/", {"q": "mirror"}).content.decode()
        assert '<option value="alpha">Alpha</option>' in html and "gamma" not in html
        for params, field in (
            ({"q": '"open'}, "q"),
            ({"q": "-left"}, "q"),
            ({"q": "x", "level": "7"}, "level"),
            ({"q": "x", "track": "fish"}, "track"),
            ({"q": "x", "outcome": "won"}, "outcome"),
            ({"q": "x", "condition": "upside-down"}, "condition"),
            ({"q": "x", "model": "nobody"}, "model"),
            ({"q": "x", "page": "0"}, "page"),
            ({"q": "x", "run": "abc"}, "run"),
        ):
            response = self.client.get("/search/", params)
            assert response.status_code == 400, params
            assert f"<code>{field}</code>" in response.content.decode(), params

    def test_a_runs_own_search_is_its_owners_when_private(self):
        run = self.steps["secret"].episode.run
        address = f"/search/?q=mirror&run={run.pk}"
        assert self.client.get(address).status_code == 404
        self.client.force_login(self.outsider)
        assert self.client.get(address).status_code == 404
        self.client.force_login(self.dana)
        html = self.client.get(address).content.decode()
        assert "Secret <mark>mirror</mark> plan" in html
        assert "towards the" not in html  # another run's step
        # The site-wide search keeps private runs out, even for their owner.
        assert "Secret" not in self.client.get("/search/?q=mirror").content.decode()

    def test_the_index_follows_steps_as_they_are_stored_changed_and_deleted(self):
        step = self.steps["confused"]
        found = lambda q: [h.step.pk for h in step_search_hits(q)]  # noqa: E731
        assert step.pk not in found("periscope")
        Step.objects.filter(pk=step.pk).update(response="A periscope, not a mirror")
        assert found("periscope") == [step.pk]
        added = Step.objects.create(
            episode=step.episode, index=1, response="periscope again", executed=True,
            distance_steps=1, hand_cell=[0, 0, 0],
        )  # fmt: skip
        assert found("periscope") == [added.pk, step.pk]
        Step.objects.filter(pk=added.pk).delete()
        assert found("periscope") == [step.pk]

    def test_a_lost_index_is_rebuilt_from_the_stored_steps(self):
        with connection.cursor() as cursor:
            cursor.execute(f"DROP TRIGGER {FTS_TABLE}_insert")
        assert step_search_index_ensure(connection=connection)
        assert not step_search_index_ensure(connection=connection)
        assert corpus_results() == [expected for _, _, expected in QUERIES]

    def test_paging_goes_on_while_there_are_more(self):
        query = parse_query("mirr*")
        pages = [step_search(query=query, page=n, per_page=2) for n in (1, 2, 3)]
        assert [p.has_next for p in pages] == [True, True, False]
        assert [len(p.hits) for p in pages] == [2, 2, 1]
        html = self.client.get("/search/", {"q": "mirr*", "level": "0"}).content.decode()
        assert 'rel="next"' not in html and 'rel="prev"' not in html


def step_search_hits(text: str):
    return step_search(query=parse_query(text)).hits


@pytest.mark.slow
def test_postgresql_finds_the_same_steps_as_sqlite(tmp_path):
    with postgres_or_missing() as url:
        env = {
            **os.environ,
            "DATABASE_URL": url,
            "MIRRORBENCH_DATA_DIR": str(tmp_path),
            "DJANGO_SETTINGS_MODULE": "mirrorbench_site.settings",
        }
        for args in (
            ["migrate", "--noinput"],
            ["shell", "-c", "from tests.leaderboard.search_corpus import main; main()"],
        ):
            result = subprocess.run(
                [sys.executable, "manage.py", *args],
                cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
            )  # fmt: skip
            assert result.returncode == 0, result.stderr[-3000:]
        found = json.loads(result.stdout.strip().splitlines()[-1])
        assert set(found) == {*WAYS, *(f"{way}, paged" for way in WAYS)}
        for way, results in found.items():
            assert results == [expected for _, _, expected in QUERIES], way
        assert {*STEPS, "late"} >= {label for labels in found["narrow"] for label in labels}
