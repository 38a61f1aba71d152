"""The chart pages and the chart API, read as a visitor and as a client of the API would.

The rows are made once for each class (``class_rows``); what a test adds is undone after it.
"""

from __future__ import annotations

import pytest

from leaderboard.models import BenchmarkVersion, ModelEntry, Run
from leaderboard.renderers import published
from leaderboard.runs.imports import reference_results_load
from mirrorbench_site.static import PLOTLY_JS
from tests.leaderboard.factories import board_run, import_run
from tests.leaderboard.test_pages import page_rows

pytestmark = pytest.mark.django_db

CHART_APIS = [
    "/api/charts/stability/",
    "/api/charts/stability-ranking/",
    "/api/charts/radar/",
    "/api/charts/trajectories/",
    "/api/charts/tracks/",
]


@pytest.fixture(scope="class")
def paper(class_rows):
    """The paper's rows only: enough for every bad query."""
    with class_rows():
        reference_results_load()


@pytest.fixture(scope="class")
def board(class_rows, bundles):
    """The paper's rows, the random baseline evaluated here, and a small open-weights model
    (with their steps: a model page shows what its run's answers say, the run API its behaviour)."""
    with class_rows():
        reference_results_load()
        random = import_run(bundles["random"], "Random", kind=ModelEntry.Kind.BASELINE)
        small = import_run(bundles["mirror-confused"], "Small-VL-7B", params_b=7.0)
    return {"random": random, "small": small}


def names_in(figure):
    return {name for trace in figure["data"] for name in trace.get("text") or trace["y"]}


def test_the_api_index_lists_the_chart_endpoints(client):
    names = {row["name"] for row in client.get("/api/").json()}
    assert {
        "api-chart-stability",
        "api-chart-stability-ranking",
        "api-chart-radar",
        "api-chart-trajectories",
        "api-chart-tracks",
    } <= names


def test_plotly_js_is_the_sites_bundle_served_from_its_static_files(client):
    response = client.get("/static/vendor/plotly.min.js")
    assert response.status_code == 200
    served = b"".join(response.streaming_content)
    assert served == PLOTLY_JS.read_bytes()
    assert served.startswith(b"/*! plotly.js v")


class TestThePapersRows:
    """Bad queries, against the paper's rows."""

    @pytest.mark.parametrize(
        ("url", "message"),
        [
            ("/api/charts/radar/?m=nobody", "no model 'nobody' on the v3 leaderboard"),
            ("/api/charts/radar/?m=a&m=b&m=c&m=d&m=e", "at most 4 models, got 5"),
            ("/api/charts/trajectories/?m=bad%20slug", "is not a model slug"),
            ("/api/charts/trajectories/?m=%3Cscript%3E", "is not a model slug"),
        ],
    )
    def test_bad_models_are_a_400_naming_the_parameter(self, client, paper, url, message):
        response = client.get(url)
        assert response.status_code == 400
        assert message in response.json()["m"][0]

    def test_an_unknown_version_is_a_400_naming_the_parameter(self, client, paper):
        for url in [*CHART_APIS, "/charts/", "/compare/?m=random&m=gpt-41-api"]:
            joiner = "&" if "?" in url else "?"
            response = client.get(f"{url}{joiner}version=v9")
            assert response.status_code == 400, url
            text = response.content.decode()
            assert "version" in text and "v9" in text

    @pytest.mark.parametrize(
        ("query", "message"),
        [
            ("?m=random", "choose 2 to 4 models, got 1"),
            ("", "choose 2 to 4 models, got 0"),
            ("?m=gpt-41-api&m=nobody", "no model &#x27;nobody&#x27; on the v3 leaderboard"),
            ("?m=a&m=b&m=c&m=d&m=e", "at most 4 models, got 5"),
        ],
    )
    def test_a_bad_comparison_is_a_400_page_naming_the_parameter(
        self, client, paper, query, message
    ):
        response = client.get(f"/compare/{query}")
        assert response.status_code == 400
        content = response.content.decode()
        assert "<code>m</code>" in content and message in content


class TestABoard:
    """The paper's rows, the random baseline and a small model: what the charts draw."""

    def test_every_chart_api_returns_a_plotly_figure_its_config_and_its_table(self, client, board):
        for url in CHART_APIS:
            response = client.get(url)
            assert response.status_code == 200, url
            chart = response.json()
            assert set(chart) == {"figure", "config", "narrow", "table"}
            assert chart["figure"]["data"] and "layout" in chart["figure"]
            assert chart["config"]["toImageButtonOptions"]["format"] == "png"
            table = chart["table"]
            assert table["rows"] and len(table["columns"]) == len(table["rows"][0])

    def test_the_stability_chart_has_the_models_with_episodes_and_says_why_the_papers_are_absent(
        self, client, board
    ):
        chart = client.get("/api/charts/stability/").json()
        assert names_in(chart["figure"]) == {"Random", "Small-VL-7B"}
        board["random"].refresh_from_db()
        random = next(t for t in chart["figure"]["data"] if t["name"] == "Baseline")
        assert random["y"] == [published(board["random"].cognitive_stability)]
        assert "the paper reports only its tables, not per-scene results" in chart["table"]["note"]
        page = client.get("/charts/").content.decode()
        assert "not on this chart" in page and 'data-chart-url="/api/charts/stability/"' in page

    def test_the_radar_and_trajectories_default_to_the_best_models_and_random(self, client, board):
        radar = client.get("/api/charts/radar/").json()
        names = [t["name"] for t in radar["figure"]["data"] if t["showlegend"]]
        assert names == ["Gemini-2.5-Pro-API", "Gemini-2.5-Flash-API", "GPT-4.1-API", "Random"]
        assert len(radar["figure"]["data"]) == 16

    def test_the_trajectories_of_the_papers_rows_are_its_level_tables(self, client, board):
        chart = client.get("/api/charts/trajectories/?m=gpt-41-api&m=llava-16-7b").json()
        traces = chart["figure"]["data"]
        assert len(traces) == 8
        gpt_tsr, llava_tsr = traces[0], traces[4]
        levels = ["0", "1", "2", "3"]
        for trace, slug in ((gpt_tsr, "gpt-41-api"), (llava_tsr, "llava-16-7b")):
            run = Run.objects.get(model_entry__slug=slug)
            expected = [run.scores.get(table=level, track="overall").tsr for level in levels]
            assert trace["y"] == expected

    def test_the_charts_page_has_every_chart_with_its_table_and_a_picker(self, client, board):
        content = client.get("/charts/?m=random&m=small-vl-7b").content.decode()
        for url in (
            "/api/charts/stability/",
            "/api/charts/stability-ranking/",
            "/api/charts/radar/?m=random&amp;m=small-vl-7b",
            "/api/charts/trajectories/?m=random&amp;m=small-vl-7b",
            "/api/charts/tracks/",
            "/api/charts/cost/",
        ):
            assert f'data-chart-url="{url}"' in content
        assert content.count('<details class="chart-data"') == 6
        assert content.count('<select name="m"') == 4
        assert '<option value="random" selected>' in content
        assert 'href="/compare/?m=random&amp;m=small-vl-7b"' in content
        assert "/static/vendor/plotly.min.js" in content and "/static/js/charts.js" in content
        assert "<script>" not in content  # no inline script

    def test_the_compare_page_sets_level_tables_charts_and_scene_wins_side_by_side(
        self, client, board
    ):
        content = client.get("/compare/?m=random&m=small-vl-7b&m=gpt-41-api").content.decode()
        rows = page_rows(client, "/compare/?m=random&m=small-vl-7b&m=gpt-41-api")
        level_0 = rows[:3]
        gpt = Run.objects.get(model_entry__slug="gpt-41-api").scores.get(table="0", track="overall")
        assert level_0[2][0].startswith("GPT-4.1-API")
        assert level_0[2][1:6] == [
            f"{getattr(gpt, m):.3f}" for m in ("tsr", "sir", "fcr", "pcr", "avg")
        ]
        assert (
            'data-chart-url="/api/charts/radar/?m=random&amp;m=small-vl-7b&amp;m=gpt-41-api"'
            in (content)
        )
        # Random against the mirror-confused model, scene by scene; GPT-4.1 is reported only.
        # The pair's win-loss row comes before its scene-by-scene table's 66 rows.
        pair = rows[-67]
        wins, ties, losses, scenes = (int(cell) for cell in pair[2:6])
        assert pair[:2] == ["Random", "Small-VL-7B"]
        assert wins + ties + losses == scenes == 66 and wins > losses
        by_scene = rows[-66:]
        assert sum(row[3] == "win" for row in by_scene) == wins
        assert sum(row[3] == "loss" for row in by_scene) == losses

    def test_scene_wins_need_two_models_with_episodes(self, client, board):
        content = client.get("/compare/?m=random&m=gpt-41-api").content.decode()
        assert "needs two models with episodes; GPT-4.1-API is reported in the paper" in content

    def test_a_model_page_shows_its_radar_and_trajectories_beside_random_and_the_best(
        self, client, board
    ):
        content = client.get("/models/small-vl-7b/").content.decode()
        assert "beside Random and Gemini-2.5-Pro-API" in content
        url = "/api/charts/radar/?m=small-vl-7b&amp;m=random&amp;m=gemini-25-pro-api"
        assert f'data-chart-url="{url}"' in content
        # The Human reference has no level tables: no charts, and no error.
        human = client.get("/models/human/")
        assert human.status_code == 200 and "data-chart-url" not in human.content.decode()

    def test_the_tracks_page_draws_table_iii_with_its_filters(self, client, board):
        content = client.get("/tracks/?source=reported").content.decode()
        assert 'data-chart-url="/api/charts/tracks/?source=reported"' in content
        chart = client.get("/api/charts/tracks/?source=reported").json()
        assert chart["table"]["rows"][0] == ["Level 0", "0.131", "-0.076", "0.076"]
        assert client.get("/api/charts/tracks/?source=nothing").status_code == 400

    def test_private_runs_and_their_models_never_reach_a_chart(self, client, board, bundles):
        secret = board_run(bundles["oracle"], "Secret model", kind=ModelEntry.Kind.PROPRIETARY)
        Run.objects.filter(pk=secret.pk).update(visibility=Run.Visibility.PRIVATE)
        for url in CHART_APIS:
            assert "Secret model" not in client.get(url).content.decode()
        assert "Secret model" not in client.get("/charts/").content.decode()
        response = client.get("/api/charts/radar/?m=secret-model")
        assert response.status_code == 400 and "no model 'secret-model'" in response.json()["m"][0]
        assert client.get("/compare/?m=secret-model&m=random").status_code == 400

    def test_charts_rank_within_one_benchmark_version(self, client, board, bundles):
        v1, _ = BenchmarkVersion.objects.get_or_create(
            name="v1",
            defaults={"scene_set": "v1", "prompt_version": "v1", "dynamics_version": "v1"},
        )
        old = board_run(bundles["oracle"], "Old Oracle", kind=ModelEntry.Kind.BASELINE)
        Run.objects.filter(pk=old.pk).update(benchmark=v1, listed=True)
        assert "Old Oracle" not in client.get("/api/charts/stability/").content.decode()
        # A sanity check, left out unless asked for (TestTheOracle).
        chart = client.get("/api/charts/stability/?version=v1&baselines=show").json()
        assert names_in(chart["figure"]) == {"Old Oracle"}
        assert client.get("/api/charts/radar/?m=old-oracle").status_code == 400
        assert client.get("/api/charts/radar/?m=old-oracle&version=v1").status_code == 200
        page = client.get("/charts/?version=v1&baselines=show").content.decode()
        assert "Benchmark v1 is retired" in page
        assert 'data-chart-url="/api/charts/stability/?version=v1&amp;baselines=show"' in page

    def test_cognitive_stability_is_a_sortable_column_blank_with_a_reason(self, client, board):
        rows = page_rows(client, "/?sort=cognitive_stability&order=desc")
        board["random"].refresh_from_db()
        assert rows[0][1].startswith(("Random", "Small-VL-7B"))
        values = [row[-1] for row in rows]
        numbers = [v for v in values if not v.startswith("—")]
        assert len(numbers) == 2 and numbers == sorted(numbers, reverse=True)
        assert values[2:] == [values[2]] * (len(values) - 2)
        content = client.get("/").content.decode()
        assert (
            'title="Reported in the paper: no per-scene results to compute cognitive stability'
            in (content)
        )
        assert "Blank where there are no per-scene results" in content

    def test_cognitive_stability_is_in_the_csv_and_the_api(self, client, board):
        board["random"].refresh_from_db()
        csv = client.get("/leaderboard/overall.csv?q=random").content.decode().splitlines()
        header, *lines = csv
        column = header.split(",").index("cognitive_stability")
        by_source = {line.split(",")[4]: line.split(",")[column] for line in lines}
        assert by_source == {
            "reported": "",
            "evaluated": f"{board['random'].cognitive_stability:.3f}",
        }
        rows = client.get("/api/leaderboards/overall/?q=random").json()["results"]
        assert {r["source"]: r["cognitive_stability"] for r in rows} == {
            "reported": None,
            "evaluated": published(board["random"].cognitive_stability),  # as in the CSV
        }
        run = client.get(f"/api/runs/{board['random'].pk}/").json()
        assert run["cognitive_stability"] == published(board["random"].cognitive_stability)

    def test_the_chart_apis_use_a_fixed_small_number_of_queries(
        self, client, board, django_assert_max_num_queries
    ):
        for url in CHART_APIS[:2]:
            with django_assert_max_num_queries(1):
                client.get(url)
        with django_assert_max_num_queries(3):
            client.get("/api/charts/radar/?m=random&m=gpt-41-api")
        # ... and the cost chart's runs and the price table.
        with django_assert_max_num_queries(8):
            client.get("/charts/")


@pytest.fixture(scope="class")
def with_oracle(class_rows, bundles):
    """The paper's rows and the two baselines evaluated here: the Oracle and Random (without
    their steps: the charts, the tracks and their APIs read episodes and scores alone)."""
    with class_rows():
        reference_results_load()
        board_run(bundles["oracle"], "Oracle", kind=ModelEntry.Kind.BASELINE)
        board_run(bundles["random"], "Random", kind=ModelEntry.Kind.BASELINE)


@pytest.mark.usefixtures("with_oracle")
class TestTheOracle:
    """One rule for the sanity-check baseline: left out unless ``baselines=show``, as on the
    board, in every chart and the tracks page; drawn when picked by name."""

    @pytest.mark.parametrize("api", ["/api/charts/stability/", "/api/charts/stability-ranking/"])
    def test_the_stability_charts_leave_it_out_unless_asked(self, client, api):
        assert "Oracle" not in str(client.get(api).json()["figure"]["data"])
        assert "Random" in str(client.get(api).json()["figure"]["data"])
        shown = client.get(f"{api}?baselines=show").json()
        assert "Oracle" in str(shown["figure"]["data"])
        assert client.get(f"{api}?baselines=all").status_code == 400

    def test_the_charts_page_leaves_it_out_and_offers_the_switch(self, client):
        page = client.get("/charts/").content.decode()
        assert "Oracle</" not in page.split('id="stability"')[1].split("</table>")[0]
        assert 'name="baselines" value="show">' in page
        assert 'data-chart-url="/api/charts/stability/"' in page
        page = client.get("/charts/?baselines=show").content.decode()
        assert 'name="baselines" value="show" checked>' in page
        assert 'data-chart-url="/api/charts/stability/?baselines=show"' in page
        # Picked by name, it is drawn: the radar of the Oracle beside Random.
        radar = client.get("/api/charts/radar/?m=oracle&m=random").json()
        assert {trace["name"] for trace in radar["figure"]["data"]} == {"Oracle", "Random"}

    def test_the_tracks_gaps_leave_it_out_unless_asked(self, client):
        gaps = [g["slug"] for g in client.get("/api/tracks/").json()["gaps"]]
        assert "oracle" not in gaps and "random" in gaps
        shown = client.get("/api/tracks/?baselines=show").json()["gaps"]
        assert "oracle" in [g["slug"] for g in shown]
        page = client.get("/tracks/").content.decode()
        table = page.split('aria-label="Human minus robot gaps"')[1]
        assert ">Oracle</a>" not in table and ">Random</a>" in table
        assert 'href="?baselines=show">show every baseline</a>' in page
        table = client.get("/tracks/?baselines=show").content.decode().split("Human minus")[2]
        assert ">Oracle</a>" in table
