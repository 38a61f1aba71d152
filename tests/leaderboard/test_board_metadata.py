"""What a model entry says about the model (issue 33): release date, organisation, reasoning,
licence, plain model or agent scaffold; the boards filter by each, and every filtered view
offers its CSV, parquet and JSON with the same filters (issue 34).

The paper's rows are loaded once for the module, with facts set on a few of them for the
tests (not the paper's: it states none of these but that its rows are plain models).
"""

import csv
import io
import json
import re
from datetime import date
from html import unescape
from urllib.parse import parse_qsl, urlsplit

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from leaderboard.boards.entries import model_entry_upsert, model_metadata_check
from leaderboard.errors import FieldError
from leaderboard.models import ModelEntry
from leaderboard.runs.imports import REFERENCE_FIXTURE, reference_results_load
from tests.leaderboard.test_pages import page_rows

pytestmark = pytest.mark.django_db

FACTS = {
    "Gemini-2.5-Pro-API": {
        "release_date": "2025-06-17",
        "reasoning": "on",
        "licence": "proprietary",
    },
    "GPT-4.1-API": {"release_date": "2025-04-14", "reasoning": "off", "licence": "Proprietary"},
    "Qwen2.5-VL-72B": {"release_date": "2025-01-28", "licence": "Qwen"},
    "GLM-4.5V-106B": {"release_date": "2025-08-11", "reasoning": "high", "licence": "MIT"},
    "Claude-Sonnet-4.5-API": {"scaffold": "agent"},
}
"""Test facts, set on some of the paper's entries (the paper gives none of them)."""


@pytest.fixture(scope="module")
def board(module_rows):
    with module_rows():
        reference_results_load()
        for entry in ModelEntry.objects.filter(name__in=FACTS):
            model_entry_upsert(
                name=entry.name,
                kind=entry.kind,
                organisation=entry.organisation,
                params_b=entry.params_b,
                metadata=FACTS[entry.name],
            )


def _models(rows):
    return [row[1].split(" ")[0] for row in rows]


def _downloads(client, url):
    """Return the page's rows and its CSV, parquet and JSON links, as the page writes them."""
    response = client.get(url)
    assert response.status_code == 200
    html = response.content.decode()
    links = {
        name: unescape(re.search(rf'<a class="{cls}" href="([^"]+)"', html).group(1))
        for name, cls in (
            ("csv", "download"),
            ("parquet", "download-parquet"),
            ("json", "download-json"),
        )
    }
    return _models(page_rows(client, url)), links


COMBINATIONS = [
    ("organisation=google", {"Gemini-2.5-Pro-API", "Gemini-2.5-Flash-API"}),
    ("released_from=2025-03-01", {"Gemini-2.5-Pro-API", "GPT-4.1-API", "GLM-4.5V-106B"}),
    ("released_from=2025-01-01&released_to=2025-05-01&kind=proprietary", {"GPT-4.1-API"}),
    ("reasoning=on&reasoning=high&kind=open-weights", {"GLM-4.5V-106B"}),
    ("licence=PROPRIETARY&sort=model", {"Gemini-2.5-Pro-API", "GPT-4.1-API"}),
    ("scaffold=agent", {"Claude-Sonnet-4.5-API"}),
    ("scaffold=model&organisation=Zhipu+AI&organisation=openai&params_min=50", {"GLM-4.5V-106B"}),
    ("licence=qwen&licence=MIT&sort=overall_sir&order=asc", {"Qwen2.5-VL-72B", "GLM-4.5V-106B"}),
]


class TestFilteredDownloads:
    @pytest.mark.parametrize(("query", "expected"), COMBINATIONS)
    @pytest.mark.parametrize("path", ["/", "/levels/2/"])
    def test_the_pages_csv_parquet_and_json_hold_the_pages_rows(
        self, client, board, query, expected, path
    ):
        models, links = _downloads(client, f"{path}?{query}")
        assert set(models) == expected
        # Every link keeps every filter of the view.
        for link in links.values():
            assert sorted(parse_qsl(urlsplit(link).query)) == sorted(parse_qsl(query)), link
        csv_response = client.get(links["csv"])
        assert csv_response.status_code == 200
        csv_models = [
            r["model"] for r in csv.DictReader(io.StringIO(csv_response.content.decode()))
        ]
        parquet = client.get(links["parquet"])
        assert parquet.status_code == 200
        assert parquet["Content-Type"] == "application/vnd.apache.parquet"
        parquet_models = pq.read_table(io.BytesIO(parquet.content)).column("model").to_pylist()
        document = client.get(links["json"]).json()
        json_models = [row["model"] for row in document["rows"]]
        table = "overall" if path == "/" else "2"
        api = client.get(f"/api/leaderboards/{table}/?{query}").json()
        api_models = [row["model"] for row in api["results"]]
        assert csv_models == parquet_models == json_models == api_models == models

    def test_the_three_formats_hold_the_same_values(self, client, board):
        query = "kind=proprietary&kind=open-weights"
        csv_rows = list(
            csv.DictReader(
                io.StringIO(client.get(f"/leaderboard/overall.csv?{query}").content.decode())
            )
        )
        frame = pq.read_table(
            io.BytesIO(client.get(f"/leaderboard/overall.parquet?{query}").content)
        )
        rows = client.get(f"/leaderboard/overall.json?{query}").json()["rows"]
        assert len(csv_rows) == frame.num_rows == len(rows) == 18
        assert list(csv_rows[0]) == frame.column_names == list(rows[0])
        for csv_row, parquet_row, json_row in zip(csv_rows, frame.to_pylist(), rows, strict=True):
            assert parquet_row["model"] == json_row["model"] == csv_row["model"]
            assert (
                parquet_row["overall_avg"]
                == json_row["overall_avg"]
                == float(csv_row["overall_avg"])
            )
            assert parquet_row["rank"] == json_row["rank"] == int(csv_row["rank"])
            released = parquet_row["release_date"]
            assert (released.isoformat() if released else None) == json_row["release_date"]
            assert json_row["release_date"] == (csv_row["release_date"] or None)
            assert parquet_row["licence"] == json_row["licence"] == (csv_row["licence"] or None)

    def test_the_parquet_columns_are_typed(self, client, board):
        schema = pq.read_table(
            io.BytesIO(client.get("/leaderboard/level-0.parquet").content)
        ).schema
        assert schema.field("rank").type == pa.int32()
        assert schema.field("params_b").type == pa.float64()
        assert schema.field("overall_avg").type == pa.float64()
        assert schema.field("release_date").type == pa.date32()
        assert schema.field("tied_with_above").type == pa.bool_()
        assert schema.field("licence").type == pa.string()

    def test_the_leaderboard_api_gives_each_rows_metadata(self, client, board):
        rows = client.get("/api/leaderboards/overall/?q=GLM").json()["results"]
        assert rows[0]["release_date"] == "2025-08-11"
        assert rows[0]["reasoning"] == "high"
        assert rows[0]["licence"] == "MIT"
        assert rows[0]["scaffold"] == "model"
        assert rows[0]["organisation"] == "Zhipu AI"
        human = client.get("/api/leaderboards/overall/?kind=human").json()["results"][0]
        assert human["scaffold"] is None and human["release_date"] is None

    def test_the_models_api_filters_by_each_fact(self, client, board):
        def slugs(query):
            response = client.get(f"/api/models/?{query}")
            assert response.status_code == 200, response.content
            return {m["name"] for m in response.json()["results"]}

        assert slugs("released_from=2025-06-01") == {"Gemini-2.5-Pro-API", "GLM-4.5V-106B"}
        assert slugs("reasoning=off") == {"GPT-4.1-API"}
        assert slugs("licence=mit") == {"GLM-4.5V-106B"}
        assert slugs("scaffold=agent") == {"Claude-Sonnet-4.5-API"}
        assert len(slugs("scaffold=model")) == 17

    @pytest.mark.parametrize(
        ("query", "field"),
        [
            ("released_from=2025-13-01", "released_from"),
            ("released_to=yesterday", "released_to"),
            ("released_from=2025-05-01&released_to=2025-01-01", "released_to"),
            ("reasoning=extreme", "reasoning"),
            ("scaffold=robot", "scaffold"),
            ("licence=" + "x" * 201, "licence"),
        ],
    )
    def test_a_bad_filter_is_a_400_naming_it_everywhere(self, client, board, query, field):
        for url in (
            f"/?{query}",
            f"/levels/1/?{query}",
            f"/leaderboard/overall.csv?{query}",
            f"/leaderboard/level-3.parquet?{query}",
            f"/leaderboard/overall.json?{query}",
        ):
            response = client.get(url)
            assert response.status_code == 400, url
            assert field in response.content.decode(), url
        api = client.get(f"/api/leaderboards/overall/?{query}")
        assert api.status_code == 400
        assert field in json.dumps(api.json())

    def test_the_filter_panel_keeps_what_was_asked(self, client, board):
        html = client.get(
            "/?organisation=Google&released_from=2025-01-01&reasoning=on&scaffold=model"
        ).content.decode()
        assert 'name="organisation" value="Google"' in html
        assert 'name="released_from" value="2025-01-01"' in html
        assert re.search(r'name="reasoning" value="on" checked', html)
        assert re.search(r'name="scaffold" value="model" checked', html)
        # Suggestions: the board's organisations and licences.
        assert '<option value="Zhipu AI">' in html and '<option value="MIT">' in html
        assert "4 active" in html


class TestModelPage:
    def test_the_model_page_shows_its_facts(self, client, board):
        html = client.get("/models/glm-45v-106b/").content.decode()
        facts = re.search(r'<dl class="model-facts".*?</dl>', html, re.S).group(0)
        text = " ".join(re.sub(r"<[^>]+>", " ", facts).split())
        assert "Organisation Zhipu AI" in text
        assert "Weights open" in text
        assert "Parameters 106B" in text
        assert "Released 2025-08-11" in text
        assert "Reasoning High effort" in text
        assert "Licence MIT" in text
        assert "Model or agent Plain model" in text
        assert 'href="/?licence=MIT"' in facts

    def test_what_is_not_known_says_so(self, client, board):
        html = client.get("/models/qwen-vl-max-api/").content.decode()
        facts = re.search(r'<dl class="model-facts".*?</dl>', html, re.S).group(0)
        text = " ".join(re.sub(r"<[^>]+>", " ", facts).split())
        assert "Released not stated" in text
        assert "Reasoning not stated" in text
        assert "Licence not stated" in text


def test_the_paper_rows_get_only_what_the_paper_states(client, board):
    paper = json.loads(REFERENCE_FIXTURE.read_text())
    for model in paper["models"]:
        entry = ModelEntry.objects.get(name=model["name"])
        mllm = model["kind"] in ("proprietary", "open-weights")
        if model["name"] in FACTS:
            continue
        # The paper evaluates 18 MLLMs, each answering itself; it gives no release dates,
        # licences or reasoning settings, so those stay empty.
        assert entry.scaffold == ("model" if mllm else "")
        assert (entry.release_date, entry.reasoning, entry.licence) == (None, "", "")


@pytest.mark.parametrize(
    ("metadata", "field"),
    [
        ({"release_date": "17/06/2025"}, "release_date"),
        ({"reasoning": "max"}, "reasoning"),
        ({"scaffold": "tool"}, "scaffold"),
        ({"licence": "x" * 101}, "licence"),
        ({"size": "7"}, "size"),
    ],
)
def test_a_bad_fact_is_refused_naming_its_field(metadata, field):
    with pytest.raises(FieldError) as raised:
        model_metadata_check(metadata)
    assert raised.value.field == field


def test_facts_are_stored_as_given():
    assert model_metadata_check(
        {"release_date": "2025-01-02", "reasoning": "low", "licence": " MIT ", "scaffold": ""}
    ) == {"release_date": date(2025, 1, 2), "reasoning": "low", "licence": "MIT", "scaffold": ""}
