"""The read-only REST API: shapes, filters, pagination, 400s, privacy, schema, query counts.

The rows a test reads are made once for its class (``class_rows``): the paper's models, the
random baseline evaluated here, or sixty models; what a test writes on top is undone after it.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import pytest
import yaml
from django.http import QueryDict
from drf_spectacular.validation import validate_schema

from evaluation.agents import RandomAgent
from evaluation.bundle import Bundle, read_bundle
from evaluation.config import RunConfig
from evaluation.metrics import METRICS, TRACKS
from evaluation.runner import run
from leaderboard.boards.entries import model_entry_upsert
from leaderboard.boards.forms import LeaderboardQueryForm
from leaderboard.boards.selectors import TABLES, leaderboard_table, tracks_page
from leaderboard.models import Episode, ModelEntry, Run
from leaderboard.renderers import published
from leaderboard.runs.imports import (
    REFERENCE_FIXTURE,
    reference_results_load,
    run_import_bundle,
)
from tests.conftest import Unblock

pytestmark = pytest.mark.django_db
PAGE_SIZE = 50


@pytest.fixture(scope="module")
def random_bundle(tmp_path_factory: pytest.TempPathFactory) -> Bundle:
    """A full 264-episode bundle of the random baseline, written once for the module."""
    path = tmp_path_factory.mktemp("api") / "random.jsonl"
    run(lambda: RandomAgent(0), RunConfig(agent="random"), path)
    return read_bundle(path)


@pytest.fixture(scope="class")
def paper(class_rows: Unblock) -> None:
    """The paper's 20 models, each with one reported run."""
    with class_rows():
        reference_results_load()


@pytest.fixture(scope="class")
def many_models(class_rows: Unblock, tmp_path_factory: pytest.TempPathFactory) -> int:
    """Three copies of the paper's models under other names: 60 listed reported runs."""
    data = json.loads(REFERENCE_FIXTURE.read_text())
    data["models"] = [
        {**model, "name": f"{model['name']} (copy {copy})"}
        for copy in range(3)
        for model in data["models"]
    ]
    path = tmp_path_factory.mktemp("many") / "many.json"
    path.write_text(json.dumps(data))
    with class_rows():
        return reference_results_load(path=path)


def random_here(random_bundle: Bundle, *, with_steps: bool) -> Run:
    """Import the random baseline as evaluated here: a listed public run with its episodes
    and scores, and its steps unless ``with_steps`` is false."""
    entry = model_entry_upsert(name="Random (here)", kind=ModelEntry.Kind.BASELINE)
    return run_import_bundle(
        model_entry=entry, bundle=random_bundle, source="evaluated", with_steps=with_steps
    ).run


@pytest.fixture(scope="class")
def evaluated_run(class_rows: Unblock, random_bundle: Bundle) -> Run:
    """The random baseline, evaluated here: a listed public run with episodes and steps."""
    with class_rows():
        return random_here(random_bundle, with_steps=True)


@pytest.fixture
def private_run(db: None, random_bundle: Bundle) -> Run:
    """A run its owner made private after it was listed (no service sets visibility yet),
    without its steps: its tests check only that it is seen nowhere."""
    entry = model_entry_upsert(
        name="Secret model", kind=ModelEntry.Kind.PROPRIETARY, organisation="Hidden Lab"
    )
    imported = run_import_bundle(
        model_entry=entry, bundle=random_bundle, source="verified", with_steps=False
    ).run
    Run.objects.filter(pk=imported.pk).update(visibility=Run.Visibility.PRIVATE)
    imported.refresh_from_db()
    return imported


def _get(client: Any, url: str, status: int = 200) -> Any:
    response = client.get(url)
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json")
    return response.json()


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _not_a_choice(value: str) -> str:
    return f"Select a valid choice. {value} is not one of the available choices."


def _first_scene_id(run_row: Run) -> str:
    episode = run_row.episodes.select_related("scene").first()
    assert episode is not None
    return episode.scene.scene_id


def _leaderboard_query_cases() -> list[str]:
    return [
        "",
        "kind=open-weights&kind=proprietary",
        "source=evaluated",
        "params_min=7&params_max=72",
        "q=QWEN",
        "sort=robot_avg",
        "sort=human_tsr&order=asc",
        "sort=params_b&order=desc",
        "sort=model",
        "order=desc",
    ]


# An empty site, the schema and the docs.


def test_an_empty_site_answers_empty_pages_not_errors(client: Any) -> None:
    for table in TABLES:
        body = _get(client, f"/api/leaderboards/{table}/?sort=params_b&params_min=1&q=x")
        assert body == {"count": 0, "next": None, "previous": None, "results": []}
    assert _get(client, "/api/tracks/") == {"models": 0, "table_iii": [], "gaps": []}
    for url in ("/api/models/", "/api/runs/", "/api/episodes/"):
        assert _get(client, url)["count"] == 0


def test_the_episode_list_names_every_bad_filter_at_once(client: Any) -> None:
    body = _get(client, "/api/episodes/?level=9&run=abc&status=nope", status=400)

    assert body == {
        "run": ["Enter a whole number."],
        "level": [_not_a_choice("9")],
        "status": [_not_a_choice("nope")],
    }


def test_the_docs_lock_only_what_needs_a_key_and_say_what_writes(client: Any) -> None:
    schema = yaml.safe_load(client.get("/api/schema/").content)
    locked = {
        (method.upper(), path)
        for path, operations in schema["paths"].items()
        for method, operation in operations.items()
        if operation.get("security")
    }
    # Public reads show no padlock; the two writes and one's own submissions keep theirs.
    assert locked == {
        ("POST", "/api/evaluations/"),
        ("GET", "/api/submissions/"),
        ("POST", "/api/submissions/"),
        ("GET", "/api/submissions/{submission_id}/"),
    }
    assert schema["paths"]["/api/runs/"]["get"]["security"] == []
    description = schema["info"]["description"]
    assert "Read-only" not in description
    assert "POST /api/evaluations/" in description and "POST /api/submissions/" in description


def test_the_docs_and_the_browsable_api_lead_back_to_the_site(client: Any) -> None:
    docs = client.get("/api/docs/").content.decode()
    assert '<a class="brand" href="/">' in docs and 'href="/api/">Browsable API</a>' in docs
    browsable = client.get("/api/", HTTP_ACCEPT="text/html").content.decode()
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in browsable
    assert (
        'class="navbar-brand" href="/"' in browsable and 'href="/api/docs/">API docs<' in browsable
    )
    assert "Django REST framework" not in browsable.split("</head>")[0]
    assert "/static/css/api.css" in browsable


def test_the_schema_is_a_valid_openapi_document_with_every_endpoint(client: Any) -> None:
    response = client.get("/api/schema/")
    assert response.status_code == 200

    schema = yaml.safe_load(response.content)
    validate_schema(schema)

    paths = schema["paths"]
    assert {
        "/api/models/",
        "/api/models/{slug}/",
        "/api/leaderboards/{table}/",
        "/api/tracks/",
        "/api/runs/",
        "/api/runs/{run_id}/",
        "/api/episodes/",
        "/api/episodes/{episode_id}/",
    } <= set(paths)

    def parameters(path: str) -> set[str]:
        return {p["name"] for p in paths[path]["get"].get("parameters", [])}

    assert parameters("/api/models/") == {
        "kind",
        "organisation",
        "q",
        "params_min",
        "params_max",
        "released_from",
        "released_to",
        "reasoning",
        "licence",
        "scaffold",
        "page",
    }
    assert parameters("/api/leaderboards/{table}/") == {
        "table",
        "kind",
        "source",
        "params_min",
        "params_max",
        "q",
        "organisation",
        "released_from",
        "released_to",
        "reasoning",
        "licence",
        "scaffold",
        "sort",
        "order",
        "version",
        "rendered_by",
        "baselines",
        "ci",
        "page",
    }
    assert parameters("/api/tracks/") == {"source", "version", "baselines"}
    assert parameters("/api/runs/") == {"model", "source", "status", "listed", "version", "page"}
    assert parameters("/api/episodes/") == {"run", "level", "scene", "status", "success", "page"}
    for path in ("/api/models/", "/api/leaderboards/{table}/", "/api/runs/", "/api/episodes/"):
        responses = paths[path]["get"]["responses"]
        assert {"200", "400"} <= set(responses)
        ok = responses["200"]["content"]["application/json"]["schema"]["$ref"]
        assert ok.split("/")[-1].startswith("Paginated")
    table = next(
        p for p in paths["/api/leaderboards/{table}/"]["get"]["parameters"] if p["name"] == "table"
    )
    assert table["schema"]["enum"] == sorted(TABLES)


def test_the_docs_render_with_no_external_url_and_their_assets_are_served(client: Any) -> None:
    response = client.get("/api/docs/")
    assert response.status_code == 200
    html = response.content.decode()

    assert re.findall(r"https?://", html) == []
    assets = re.findall(r'(?:src|href)="(/static/[^"]+)"', html)
    assert any(a.endswith("swagger-ui-bundle.js") for a in assets)
    for asset in assets:
        assert client.get(asset).status_code == 200, asset


@pytest.mark.usefixtures("paper")
class TestThePapersModels:
    """The paper's 20 models, each with one reported run."""

    def test_the_model_list_gives_every_entry_by_name_with_its_facts(self, client: Any) -> None:
        body = _get(client, "/api/models/")

        assert body["count"] == 20
        assert body["next"] is None
        names = [row["name"] for row in body["results"]]
        assert names == sorted(names)
        gpt = next(row for row in body["results"] if row["name"] == "GPT-4o-API")
        assert gpt == {
            "slug": "gpt-4o-api",
            "name": "GPT-4o-API",
            "organisation": "OpenAI",
            "kind": "proprietary",
            "params_b": None,
            "release_date": None,
            "reasoning": "",
            "licence": "",
            "scaffold": "model",
            "links": [],
        }

    @pytest.mark.parametrize(
        ("query", "expected"),
        [
            ("kind=human", {"Human"}),
            ("kind=human&kind=baseline", {"Human", "Random"}),
            ("organisation=openai", {"GPT-4.1-API", "GPT-4o-API", "GPT-4o-Mini-API"}),
            ("q=internvl", {"InternVL3.5-1B", "InternVL3.5-2B", "InternVL3.5-4B"}),
            ("q=zhipu", {"GLM-4.5V-106B"}),
            ("params_min=32&params_max=72", {"Qwen2.5-VL-32B", "Qwen2.5-VL-72B"}),
            ("params_min=100", {"GLM-4.5V-106B"}),
            ("kind=open-weights&params_max=2", {"InternVL3.5-1B", "InternVL3.5-2B"}),
        ],
    )
    def test_the_model_list_filters_by_kind_organisation_text_and_size(
        self, client: Any, query: str, expected: set[str]
    ) -> None:
        body = _get(client, f"/api/models/?{query}")

        assert {row["name"] for row in body["results"]} == expected
        assert body["count"] == len(expected)

    @pytest.mark.parametrize(
        ("query", "field", "message"),
        [
            ("kind=robot", "kind", "Select a valid choice"),
            ("params_min=abc", "params_min", "Enter a number."),
            ("params_max=-1", "params_max", "greater than or equal to 0"),
            ("params_min=nan", "params_min", "Enter a number."),
            ("params_min=9&params_max=3", "params_max", "must be at least params_min"),
            ("q=" + "x" * 101, "q", "at most 100 characters"),
            ("page=abc", "page", "not an integer"),
            ("page=9", "page", "no results"),
        ],
    )
    def test_the_model_list_refuses_a_bad_parameter_naming_it(
        self, client: Any, query: str, field: str, message: str
    ) -> None:
        body = _get(client, f"/api/models/?{query}", status=400)

        assert list(body) == [field]
        assert message in body[field][0]

    def test_a_model_gives_its_public_runs_newest_first_with_every_score_row(
        self, client: Any, random_bundle: Bundle
    ) -> None:
        entry = ModelEntry.objects.get(name="GPT-4o-API")
        run_import_bundle(
            model_entry=entry, bundle=random_bundle, source="verified", with_steps=False
        )

        body = _get(client, "/api/models/gpt-4o-api/")

        assert body["name"] == "GPT-4o-API"
        assert body["organisation"] == "OpenAI"
        assert [r["source"] for r in body["runs"]] == ["verified", "reported"]
        verified, reported = body["runs"]
        assert {"id", "source", "status", "listed", "agent", "scores"} <= set(reported)
        assert reported["status"] == "completed"
        assert reported["listed"] is True
        assert len(reported["scores"]) == 15  # levels 0-3 and overall, 3 tracks each
        assert {s["table"] for s in reported["scores"]} == set(TABLES)
        overall = next(
            s for s in reported["scores"] if s["table"] == "overall" and s["track"] == "overall"
        )
        assert set(overall) == {"table", "track", *METRICS, "ci", "episodes"}
        assert overall["ci"] is None
        assert overall["episodes"] is None
        assert all(s["ci"] and s["episodes"] for s in verified["scores"])

    def test_a_model_with_only_private_runs_and_an_unknown_model_are_404(
        self, client: Any, private_run: Run
    ) -> None:
        # A private run must not reveal even its model's name.
        _get(client, "/api/models/secret-model/", status=404)
        assert "secret-model" not in {m["slug"] for m in _get(client, "/api/models/")["results"]}

        assert "detail" in _get(client, "/api/models/no-such-model/", status=404)

    def test_a_level_leaderboard_leaves_out_the_models_the_paper_scores_only_overall(
        self,
        client: Any,
    ) -> None:
        body = _get(client, "/api/leaderboards/2/")

        names = {r["model"] for r in body["results"]}
        assert body["count"] == 18
        assert "Human" not in names
        assert "Random" not in names

    @pytest.mark.parametrize("table", ["4", "level-1", "Overall", "tracks"])
    def test_an_unknown_leaderboard_table_is_404(self, client: Any, table: str) -> None:
        body = _get(client, f"/api/leaderboards/{table}/", status=404)

        assert "0, 1, 2, 3, overall" in body["detail"]

    @pytest.mark.parametrize(
        ("query", "errors"),
        [
            ("params_min=abc", {"params_min": ["Enter a number."]}),
            ("kind=robot", {"kind": [_not_a_choice("robot")]}),
            ("source=paper", {"source": [_not_a_choice("paper")]}),
            ("sort=name", {"sort": [_not_a_choice("name")]}),
            ("order=up", {"order": [_not_a_choice("up")]}),
            ("params_min=9&params_max=3", {"params_max": ["must be at least params_min"]}),
            (
                "params_min=x&params_max=y",
                {"params_min": ["Enter a number."], "params_max": ["Enter a number."]},
            ),
            ("page=0", {"page": ["That page number is less than 1"]}),
        ],
    )
    def test_a_leaderboard_refuses_bad_parameters_naming_each_with_what_was_expected(
        self, client: Any, query: str, errors: dict[str, list[str]]
    ) -> None:
        assert _get(client, f"/api/leaderboards/overall/?{query}", status=400) == errors

    def test_tracks_refuses_an_unknown_source(self, client: Any) -> None:
        body = _get(client, "/api/tracks/?source=paper", status=400)

        assert list(body) == ["source"]
        assert "paper" in body["source"][0]

    @pytest.mark.parametrize(
        ("query", "field"),
        [
            ("source=paper", "source"),
            ("status=nope", "status"),
            ("listed=maybe", "listed"),
            ("model=not a slug!", "model"),
            ("page=x", "page"),
        ],
    )
    def test_the_run_list_refuses_a_bad_filter_naming_it(
        self, client: Any, query: str, field: str
    ) -> None:
        body = _get(client, f"/api/runs/?{query}", status=400)

        assert list(body) == [field]
        assert body[field][0]

    @pytest.mark.parametrize(
        ("query", "field"),
        [
            ("level=9", "level"),
            ("level=one", "level"),
            ("run=abc", "run"),
            ("run=1.5", "run"),
            ("run=0", "run"),
            ("run=" + "9" * 25, "run"),
            ("status=nope", "status"),
            ("success=maybe", "success"),
            ("page=99", "page"),
        ],
    )
    def test_the_episode_list_refuses_a_bad_filter_naming_it(
        self, client: Any, query: str, field: str
    ) -> None:
        body = _get(client, f"/api/episodes/?{query}", status=400)

        assert list(body) == [field]
        assert body[field][0]


@pytest.mark.usefixtures("paper", "evaluated_run")
class TestThePapersModelsAndARunEvaluatedHere:
    """The paper's models, then the random baseline evaluated here."""

    @pytest.fixture(scope="class")
    @classmethod
    def evaluated_run(cls, class_rows: Unblock, random_bundle: Bundle) -> Run:
        """The module's ``evaluated_run`` without its steps: this class reads the boards, the
        tracks and the run and episode lists, which come from episodes and scores alone."""
        with class_rows():
            return random_here(random_bundle, with_steps=False)

    @pytest.mark.parametrize("table", TABLES)
    def test_a_leaderboard_gives_the_rows_of_leaderboard_table_in_order_with_the_same_numbers(
        self, client: Any, table: str
    ) -> None:
        for query in _leaderboard_query_cases():
            form = LeaderboardQueryForm(QueryDict(query))
            assert form.is_valid()
            frame = leaderboard_table(table=table, filters=form.filters()).frame
            expected = frame.to_dict("records")

            body = _get(client, f"/api/leaderboards/{table}/?{query}")

            assert body["count"] == len(expected), query
            assert [r["run_id"] for r in body["results"]] == [r["run_id"] for r in expected], query
            for row, want in zip(body["results"], expected, strict=True):
                assert row["rank"] == want["rank"]
                for key in ("model", "slug", "kind", "source", "params_b"):
                    assert row[key] == (None if _missing(want[key]) else published(want[key]))
                for track in TRACKS:
                    scores = row["scores"][track]
                    for metric in METRICS:
                        value = want[f"{track}_{metric}"]
                        if scores is None:
                            assert _missing(value)
                        else:
                            assert scores[metric] == published(value)  # 3 decimals

    def test_a_leaderboard_row_has_rank_model_facts_and_scores_by_track(self, client: Any) -> None:
        body = _get(client, "/api/leaderboards/overall/")

        assert body["count"] == 21
        first = body["results"][0]
        assert set(first) == {
            "rank",
            "model",
            "slug",
            "kind",
            "params_b",
            "source",
            "run_id",
            "scores",
            "cognitive_stability",
            "rank_interval",
            "tied_with_above",
            "repeats",
            "repeat_spread",
            "preliminary",
            "organisation",
            "release_date",
            "reasoning",
            "licence",
            "scaffold",
        }
        human = next(r for r in body["results"] if r["model"] == "Human")
        # The human reference and the baselines are reference rows: never ranked.
        assert human["rank"] is None
        assert [r["rank"] for r in body["results"] if r["kind"] in ("human", "baseline")] == [
            None
        ] * 3
        assert body["results"][1]["model"] == "Gemini-2.5-Pro-API"
        assert body["results"][1]["rank"] == 1
        assert human["params_b"] is None
        assert set(human["scores"]) == set(TRACKS)
        assert set(human["scores"]["robot"]) == set(METRICS)
        here = next(r for r in body["results"] if r["model"] == "Random (here)")
        assert here["source"] == "evaluated"
        assert here["kind"] == "baseline"
        # Rows with episodes have a rank interval (a reference row: the ranks it would take);
        # the paper's have none.
        low, high = here["rank_interval"]
        assert 1 <= low <= high <= 18
        assert human["rank_interval"] is None and body["results"][1]["rank_interval"] is None

    def test_tracks_gives_table_iii_and_the_gaps_of_tracks_page(self, client: Any) -> None:
        page = tracks_page()

        body = _get(client, "/api/tracks/")

        assert body["models"] == page.models == 18
        assert [row["level"] for row in body["table_iii"]] == ["0", "1", "2", "3", "avg"]
        for row in body["table_iii"]:
            assert {t: row[t] for t in TRACKS} == published(page.table_iii[row["level"]])
        assert [g["slug"] for g in body["gaps"]] == [g["slug"] for g in page.gaps]
        assert body["gaps"][0] == published(page.gaps[0])
        assert "random-here" in {g["slug"] for g in body["gaps"]}

    def test_tracks_filters_by_source(self, client: Any) -> None:
        body = _get(client, "/api/tracks/?source=evaluated")

        # The random baseline is not an MLLM: it has a gap but no part in Table III.
        assert body["models"] == 0
        assert body["table_iii"] == []
        assert [g["slug"] for g in body["gaps"]] == ["random-here"]
        both = _get(client, "/api/tracks/?source=evaluated&source=reported")
        assert len(both["gaps"]) == 19

    def test_the_run_list_gives_public_runs_newest_first_with_counts_and_scores(
        self, client: Any, evaluated_run: Run
    ) -> None:
        body = _get(client, "/api/runs/")

        assert body["count"] == 21
        newest = body["results"][0]
        assert newest["id"] == evaluated_run.pk
        assert newest["model"] == "Random (here)"
        assert newest["slug"] == "random-here"
        assert newest["source"] == "evaluated"
        assert newest["status"] == "completed"
        assert newest["listed"] is True
        successes = Episode.objects.filter(run=evaluated_run, success=True).count()
        assert newest["counts"] == {
            "expected": 264,
            "stored": 264,
            "completed": 264,
            "errored": 0,
            "succeeded": successes,
        }
        assert len(newest["scores"]) == 15
        assert "metadata" not in newest
        reported = body["results"][-1]
        assert reported["counts"]["stored"] == 0

    def test_the_run_list_filters_by_model_source_status_and_listed(self, client: Any) -> None:
        counts = {
            "model=gpt-4o-api": 1,
            "model=random-here": 1,
            "model=nobody": 0,
            "source=evaluated": 1,
            "source=reported": 20,
            "source=reported&source=evaluated": 21,
            "status=completed": 21,
            "status=pending": 0,
            "listed=true": 21,
            "listed=FALSE": 0,
            "listed=0": 0,
            "model=random-here&source=reported": 0,
        }
        for query, count in counts.items():
            assert _get(client, f"/api/runs/?{query}")["count"] == count, query
        only = _get(client, "/api/runs/?model=random-here")["results"][0]
        assert only["model"] == "Random (here)"

    def test_a_private_run_its_episodes_and_its_scores_are_invisible_everywhere(
        self, client: Any, private_run: Run
    ) -> None:
        episode = private_run.episodes.first()
        assert episode is not None

        assert private_run.pk not in {r["id"] for r in _get(client, "/api/runs/")["results"]}
        _get(client, f"/api/runs/{private_run.pk}/", status=404)
        assert _get(client, f"/api/episodes/?run={private_run.pk}")["count"] == 0
        assert _get(client, "/api/episodes/")["count"] == 264
        _get(client, f"/api/episodes/{episode.pk}/", status=404)
        _get(client, "/api/models/secret-model/", status=404)
        for table in TABLES:
            rows = _get(client, f"/api/leaderboards/{table}/")["results"]
            assert private_run.pk not in {r["run_id"] for r in rows}
        assert "secret-model" not in {g["slug"] for g in _get(client, "/api/tracks/")["gaps"]}

    def test_the_episode_list_filters_by_run_level_scene_status_and_success(
        self, client: Any, evaluated_run: Run
    ) -> None:
        scene = _first_scene_id(evaluated_run)
        successes = evaluated_run.episodes.filter(success=True).count()

        def count(query: str) -> int:
            return _get(client, f"/api/episodes/?{query}")["count"]

        assert count(f"run={evaluated_run.pk}") == 264
        assert count(f"run={evaluated_run.pk + 1000}") == 0
        assert count("level=3") == 66
        assert {r["level"] for r in _get(client, "/api/episodes/?level=3")["results"]} == {3}
        assert count(f"scene={scene}") == 4
        assert count(f"scene={scene}&level=0") == 1
        assert count("status=completed") == 264
        assert count("status=error") == 0
        assert count("success=true") == successes
        assert count("success=false") == 264 - successes
        assert count("success=True") == successes


@pytest.mark.usefixtures("evaluated_run")
class TestARunEvaluatedHere:
    """The random baseline evaluated here, alone."""

    def test_a_run_gives_its_metadata_benchmark_counts_and_scores(
        self, client: Any, evaluated_run: Run
    ) -> None:
        body = _get(client, f"/api/runs/{evaluated_run.pk}/")

        assert body["id"] == evaluated_run.pk
        assert body["metadata"]["agent"]["name"] == "random"
        assert body["metadata"]["selection"]["levels"] == [0, 1, 2, 3]
        assert body["benchmark"] == {
            "version": "v3",
            "scene_set": "v2",
            "prompt_version": "v3",
            "dynamics_version": "v1",
        }
        assert body["benchmark_version"] == "v3"
        assert body["counts"]["stored"] == 264
        assert {(s["table"], s["track"]) for s in body["scores"]} == {
            (table, track) for table in TABLES for track in TRACKS
        }
        assert "citation" in body
        assert _get(client, "/api/runs/999999/", status=404)["detail"]

    def test_the_episode_list_pages_the_episodes_of_public_runs(
        self, client: Any, evaluated_run: Run
    ) -> None:
        first = _get(client, "/api/episodes/")

        assert first["count"] == 264
        assert len(first["results"]) == PAGE_SIZE
        assert first["next"].endswith("/api/episodes/?page=2")
        row = first["results"][0]
        assert set(row) == {
            "id",
            "run",
            "scene",
            "track",
            "level",
            "status",
            "error",
            "success",
            "steps_taken",
            "distances",
            *METRICS,
            "confusion_rate",
            "mirror_confused",
            "bad_responses",
            "collisions",
            "replay_url",
        }
        assert row["run"] == evaluated_run.pk
        assert len(row["distances"]) == row["steps_taken"] + 1
        last = _get(client, "/api/episodes/?page=6")
        assert len(last["results"]) == 264 - 5 * PAGE_SIZE
        assert last["next"] is None
        seen = [
            r["id"]
            for p in range(1, 7)
            for r in _get(client, f"/api/episodes/?page={p}")["results"]
        ]
        assert sorted(seen) == sorted(evaluated_run.episodes.values_list("id", flat=True))

    def test_an_episode_gives_its_steps_in_order(
        self, client: Any, evaluated_run: Run, random_bundle: Bundle
    ) -> None:
        episode = (
            evaluated_run.episodes.select_related("scene")
            .filter(level=1, scene__track="Robot")
            .first()
        )
        assert episode is not None
        record = next(
            r
            for r in random_bundle.episodes
            if r["level"] == 1 and r["scene_id"] == episode.scene.scene_id
        )

        body = _get(client, f"/api/episodes/{episode.pk}/")

        assert body["scene"] == episode.scene.scene_id
        assert body["track"] == "Robot"
        assert body["run"] == evaluated_run.pk
        assert body["steps_taken"] == len(body["steps"]) == len(record["steps"])
        assert [s["index"] for s in body["steps"]] == list(range(len(record["steps"])))
        step, want = body["steps"][0], record["steps"][0]
        assert set(step) == {
            "index",
            "response",
            "option",
            "parse_error",
            "executed",
            "distance_steps",
            "hand_cell",
            "frame_key",
            "input_tokens",
            "output_tokens",
            "latency_s",
            "cached",
        }
        for key in ("response", "option", "executed", "distance_steps", "hand_cell", "frame_key"):
            assert step[key] == want[key]
        assert step["cached"] is False  # a baseline's moves are never answered from the cache
        assert _get(client, "/api/episodes/999999/", status=404)["detail"]


@pytest.mark.usefixtures("many_models")
class TestSixtyModels:
    """Three copies of the paper's models: 60 listed reported runs."""

    @pytest.mark.parametrize("url", ["/api/models/", "/api/runs/"])
    def test_the_model_and_run_lists_come_in_pages_of_fifty(self, client: Any, url: str) -> None:
        first = _get(client, url)
        assert first["count"] == 60
        assert len(first["results"]) == PAGE_SIZE
        assert first["previous"] is None
        assert first["next"].endswith(f"{url}?page=2")

        second = _get(client, f"{url}?page=2")
        assert len(second["results"]) == 10
        assert second["next"] is None
        assert second["previous"].endswith(url)
        every = [r.get("id") or r["slug"] for r in first["results"] + second["results"]]
        assert len(set(every)) == 60

    def test_a_leaderboard_is_paginated(self, client: Any) -> None:
        first = _get(client, "/api/leaderboards/overall/")
        assert first["count"] == 60
        assert len(first["results"]) == PAGE_SIZE
        assert first["next"].endswith("/api/leaderboards/overall/?page=2")

        second = _get(client, "/api/leaderboards/overall/?page=2")
        assert len(second["results"]) == 10
        assert second["next"] is None
        ranks = [r["rank"] for r in first["results"] + second["results"] if r["rank"] is not None]
        assert ranks == sorted(ranks) and len(ranks) == 54  # 3 x 18 models; Human, Random unranked


@pytest.mark.usefixtures("many_models", "evaluated_run")
class TestSixtyModelsAndARunEvaluatedHere:
    """Three copies of the paper's models, then the random baseline evaluated here: query
    counts, pinned, and the same for one row as for a full page."""

    @pytest.mark.parametrize(
        ("few", "many", "queries"),
        [
            # count, page
            ("/api/models/?q=Human+(copy+0)", "/api/models/", 2),
            # the data version; the scores of listed public runs, with runs and model entries;
            # the episodes of every run on the board (rank intervals)
            ("/api/leaderboards/overall/?q=Human+(copy+0)", "/api/leaderboards/overall/", 3),
            ("/api/leaderboards/3/?q=Qwen2.5-VL-72B+(copy+1)", "/api/leaderboards/3/", 3),
            # MLLM level tables, all level tables, their runs with model entries
            ("/api/tracks/?source=evaluated", "/api/tracks/", 3),
            # count, page with model entries, benchmarks and episode counts, scores; the price
            # table
            ("/api/runs/?model=random-here", "/api/runs/", 4),
            # count, page with scenes
            ("/api/episodes/?level=0&scene={scene}", "/api/episodes/", 2),
        ],
    )
    def test_a_list_costs_a_fixed_number_of_queries_whatever_its_length(
        self,
        client: Any,
        django_assert_num_queries: Any,
        evaluated_run: Run,
        few: str,
        many: str,
        queries: int,
    ) -> None:
        scene = _first_scene_id(evaluated_run)
        lengths = []
        for url in (few.format(scene=scene), many):
            with django_assert_num_queries(queries):
                body = _get(client, url)
            lengths.append(len(body["results"] if "results" in body else body["gaps"]))

        assert lengths[0] == 1
        assert lengths[1] > 1

    @pytest.mark.parametrize(
        ("url", "queries"),
        [
            # the entry, its public runs, their scores
            ("/api/models/qwen25-vl-72b-copy-0/", 3),
            # the run with its model entry, benchmark and episode counts; its scores; its
            # finished episodes by status and error category; its refused steps; its price
            ("/api/runs/{run}/", 5),
            # the episode with its scene and run; its steps (its frame keys are computed: they
            # were registered when it was stored)
            ("/api/episodes/{episode}/", 2),
        ],
    )
    def test_a_detail_costs_a_fixed_number_of_queries(
        self,
        client: Any,
        django_assert_num_queries: Any,
        evaluated_run: Run,
        url: str,
        queries: int,
    ) -> None:
        episode = evaluated_run.episodes.first()
        assert episode is not None
        with django_assert_num_queries(queries):
            _get(client, url.format(run=evaluated_run.pk, episode=episode.pk))
