"""The leaderboard pages and CSV downloads, read as a visitor and as a spreadsheet would.

The paper's rows are made once for the class that reads them (``class_rows``).
"""

import csv
import io
from html.parser import HTMLParser

import pytest

from leaderboard.models import Run
from leaderboard.runs.imports import reference_results_load
from tests.leaderboard.factories import board_run, import_run

pytestmark = pytest.mark.django_db


class BoardParser(HTMLParser):
    """Collects the text of each body row of ``table.board`` (one list of cells per row)."""

    def __init__(self):
        super().__init__()
        self.rows, self.row, self.cell, self.in_body = [], None, None, False

    def handle_starttag(self, tag, attrs):
        if tag == "tbody":
            self.in_body = True
        elif self.in_body and tag == "tr":
            self.row = []
        elif self.row is not None and tag in ("td", "th"):
            self.cell = []

    def handle_endtag(self, tag):
        if tag == "tbody":
            self.in_body = False
        elif tag in ("td", "th") and self.cell is not None:
            self.row.append(" ".join("".join(self.cell).split()))
            self.cell = None
        elif tag == "tr" and self.row is not None:
            self.rows.append(self.row)
            self.row = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell.append(data)


def page_rows(client, url):
    response = client.get(url)
    assert response.status_code == 200, response.content[:500]
    parser = BoardParser()
    parser.feed(response.content.decode())
    return parser.rows


def csv_rows(client, url):
    response = client.get(url)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    return list(csv.DictReader(io.StringIO(response.content.decode())))


@pytest.fixture(scope="class")
def paper(class_rows):
    """The paper's 20 models, each with one reported run."""
    with class_rows():
        reference_results_load()


def test_the_about_page_explains_levels_metrics_submission_and_citation(client):
    content = client.get("/about/").content.decode()
    for anchor in ('id="levels"', 'id="metrics"', 'id="submit"', 'id="verification"', 'id="cite"'):
        assert anchor in content
    assert "Step-wise Improvement Ratio" in content and "mirrorbench verify" in content


def test_a_model_with_only_private_runs_has_no_public_page(client, bundles):
    run = import_run(bundles["oracle"], "Secret entry")
    assert client.get("/models/secret-entry/").status_code == 200
    Run.objects.filter(pk=run.pk).update(visibility=Run.Visibility.PRIVATE)
    assert client.get("/models/secret-entry/").status_code == 404


class TestThePapersRows:
    """Made once for the class: the paper's rows; what a test imports on top is undone after it."""

    @pytest.mark.parametrize(
        ("page", "csv_url"),
        [
            ("/", "/leaderboard/overall.csv"),
            ("/levels/0/", "/leaderboard/level-0.csv"),
            ("/levels/3/", "/leaderboard/level-3.csv"),
            (
                "/?kind=open-weights&sort=robot_tsr&order=desc",
                "/leaderboard/overall.csv?kind=open-weights&sort=robot_tsr&order=desc",
            ),
            ("/levels/1/?q=qwen&params_min=10", "/leaderboard/level-1.csv?q=qwen&params_min=10"),
        ],
    )
    def test_every_csv_has_the_numbers_of_its_page(self, client, paper, page, csv_url):
        html_rows = page_rows(client, page)
        rows = csv_rows(client, csv_url)
        assert len(rows) == len(html_rows) > 0
        for html_row, row in zip(html_rows, rows, strict=True):
            # The key cell repeats the sorted score beside the model (shown on phones only).
            rank, model, key, *cells, stability = html_row
            # Reference rows (the human reference, baselines) have no rank: a dash, and a blank.
            assert rank == (row["rank"] or "—reference, not ranked")
            assert model.startswith(row["model"])
            sort = dict(p.split("=") for p in csv_url.partition("?")[2].split("&") if p).get("sort")
            assert key == row[sort or "overall_avg"]
            numbers = [
                row[f"{t}_{m}"]
                for t in ("human", "robot", "overall")
                for m in ("tsr", "sir", "fcr", "pcr", "avg")
            ]
            assert cells == numbers
            # Cognitive stability: blank in the CSV, a dash with a reason on the page, for the
            # paper's rows (no per-scene results).
            assert row["cognitive_stability"] == ""
            assert stability.startswith("—")

    def test_the_csv_columns_are_documented_ones(self, client, paper):
        header = client.get("/leaderboard/overall.csv").content.decode().splitlines()[0]
        assert header == (
            "rank,model,kind,params_b,source,organisation,release_date,reasoning,licence,scaffold,"
            + ",".join(
                f"{t}_{m}"
                for t in ("human", "robot", "overall")
                for m in ("tsr", "sir", "fcr", "pcr", "avg")
            )
            + ",cognitive_stability,rank_low,rank_high,tied_with_above,preliminary"
            + ",repeats,avg_low,avg_high,avg_sd,flip_rate"
        )

    def test_the_main_page_ranks_the_models_by_overall_avg_and_marks_the_best_two(
        self, client, paper
    ):
        content = client.get("/").content.decode()
        rows = page_rows(client, "/")
        assert [r[1].split(" ")[0] for r in rows[:3]] == [
            "Human",
            "Gemini-2.5-Pro-API",
            "Gemini-2.5-Flash-API",
        ]
        # Human is a reference row, above the models by its scores but not ranked.
        assert [r[0] for r in rows[:3]] == ["—reference, not ranked", "1", "2"]
        assert "Reference: the paper's numbers, benchmark v3" in content
        # Overall AVG: Gemini-2.5-Pro is highest among the models, Flash second.
        assert "<strong>0.442</strong>" in content and "<u>0.359</u>" in content
        assert "reported" in content and 'href="/leaderboard/overall.csv"' in content

    def test_filters_select_rows(self, client, paper):
        def models(url):
            return [r[1].split(" ")[0] for r in page_rows(client, url) if len(r) > 1]

        assert set(models("/?kind=proprietary")) == {
            "Gemini-2.5-Pro-API",
            "Gemini-2.5-Flash-API",
            "GPT-4.1-API",
            "GPT-4o-API",
            "Qwen-VL-Max-API",
            "Claude-Sonnet-4.5-API",
            "GPT-4o-Mini-API",
        }
        assert models("/?kind=human&kind=baseline") == ["Human", "Random"]
        assert models("/?params_min=30&params_max=80") == ["Qwen2.5-VL-72B", "Qwen2.5-VL-32B"]
        assert models("/?q=internvl") == ["InternVL3.5-4B", "InternVL3.5-1B", "InternVL3.5-2B"]
        assert models("/?source=evaluated") == []
        assert models("/?sort=model&order=asc")[:2] == ["Claude-Sonnet-4.5-API", "GLM-4.5V-106B"]

    def test_evaluated_runs_appear_beside_the_papers_rows_with_their_badge_and_intervals(
        self, client, paper, bundles
    ):
        board_run(bundles["random"], "Random (evaluated here)", kind="baseline")
        content = client.get("/?source=evaluated").content.decode()
        assert "Random (evaluated here)" in content and "evaluated here" in content
        assert 'title="95% CI' in content and "over 264 episodes" in content
        assert len(page_rows(client, "/")) == 21

    @pytest.mark.parametrize(
        ("query", "field"),
        [
            ("params_min=abc", "params_min"),
            ("params_min=-1", "params_min"),
            ("params_min=20&params_max=10", "params_max"),
            ("kind=alien", "kind"),
            ("source=rumour", "source"),
            ("sort=height", "sort"),
            ("order=sideways", "order"),
            ("q=" + "x" * 101, "q"),
        ],
    )
    def test_bad_query_parameters_get_a_400_naming_the_field(self, client, paper, query, field):
        for url in (f"/?{query}", f"/levels/2/?{query}"):
            response = client.get(url)
            assert response.status_code == 400
            assert f"<code>{field}</code>" in response.content.decode()
        response = client.get(f"/leaderboard/overall.csv?{query}")
        assert response.status_code == 400
        assert response.content.decode().startswith(f"{field}: ")

    def test_unknown_levels_models_and_runs_are_404(self, client, paper):
        assert client.get("/levels/4/").status_code == 404
        assert client.get("/leaderboard/level-7.csv").status_code == 404
        assert client.get("/models/no-such-model/").status_code == 404
        assert client.get("/runs/999999/").status_code == 404

    def test_the_tracks_page_and_csv_show_table_iii(self, client, paper):
        content = client.get("/tracks/").content.decode()
        assert "Averaged over 18 model results" in content
        rows = csv_rows(client, "/leaderboard/tracks.csv")
        assert [r["level"] for r in rows] == ["0", "1", "2", "3", "avg"]
        assert rows[0] == {"level": "0", "human": "0.131", "robot": "-0.076", "overall": "0.076"}
        assert client.get("/tracks/?source=alien").status_code == 400

    def test_a_model_page_shows_its_tables_and_links_its_episodes(self, client, paper, bundles):
        run = import_run(bundles["oracle"], "Gemini-2.5-Pro-API", kind="proprietary")
        content = client.get("/models/gemini-25-pro-api/").content.decode()
        assert "Reported in the paper" in content and "Evaluated here" in content
        assert "Level 0" in content and "Overall (Table II)" in content
        assert f'href="/runs/{run.pk}/"' in content
        episodes = client.get(f"/runs/{run.pk}/").content.decode()
        assert ">264 of 264 episodes<" in episodes and episodes.count('class="episode-card ') == 48
        one = client.get(f"/runs/{run.pk}/?scene=male_0-mano_white-splash&level=2").content.decode()
        assert one.count('class="episode-card ') == 1 and "male_0-mano_white-splash" in one

    def test_private_runs_are_not_shown(self, client, paper, bundles):
        run = board_run(bundles["oracle"], "Secret model")
        Run.objects.filter(pk=run.pk).update(visibility=Run.Visibility.PRIVATE)
        assert "Secret model" not in client.get("/").content.decode()
        assert client.get(f"/runs/{run.pk}/").status_code == 404

    def test_query_counts_do_not_grow_with_rows(self, client, paper, bundles):
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        urls = ["/", "/levels/2/", "/tracks/"]
        urls += ["/leaderboard/overall.csv", "/leaderboard/tracks.csv"]

        def queries(url: str) -> int:
            with CaptureQueriesContext(connection) as made:
                client.get(url)
            return len(made.captured_queries)

        for url in urls:
            client.get(url)  # warm caches (content types, sessions)
        few = {url: queries(url) for url in urls}
        for i in range(3):
            board_run(bundles["random"], f"Extra {i}", kind="open-weights", params_b=7)
        # Each import bumped the data version: the next request builds its table again (a
        # board also reads the episodes behind its rank intervals, in one query).
        more = {url: queries(url) for url in urls}
        boards = {url: 2 if "tracks" not in url else 1 for url in urls}
        assert all(more[url] <= few[url] + boards[url] for url in urls), (few, more)

    def test_pages_use_a_fixed_small_number_of_queries(
        self, client, django_assert_num_queries, paper
    ):
        # The data version, the scores, the episodes behind the rank intervals; a second
        # request finds the table cached.
        with django_assert_num_queries(3):
            client.get("/")
        with django_assert_num_queries(1):
            client.get("/")
        with django_assert_num_queries(3):
            client.get("/leaderboard/level-0.csv")
        with django_assert_num_queries(3):
            client.get("/tracks/")
        # The entry, its runs, their scores; then its charts: the best model, the charted runs.
        with django_assert_num_queries(5):
            client.get("/models/gpt-4o-api/")

    def test_a_column_where_every_model_ties_gets_no_mark(self, paper):
        from leaderboard.boards.selectors import LeaderboardFilters, leaderboard_table

        board = leaderboard_table(table="3", filters=LeaderboardFilters())
        assert set(board.frame["human_tsr"].round(3)) == {0.0}
        assert board.marks["human_tsr"] == {}
        assert board.marks["overall_avg"]  # other columns are still marked

    def test_the_tables_filter_by_the_renderer_the_agents_saw(self, client, paper, bundles):
        board_run(bundles["random"], "Evaluated VLM", kind="open-weights")
        everything = client.get("/").content.decode()
        assert "Evaluated VLM" in everything and "Gemini-2.5-Pro-API" in everything
        mujoco = client.get("/?rendered_by=mujoco").content.decode()
        assert "Evaluated VLM" in mujoco and "Gemini-2.5-Pro-API" not in mujoco
        # The paper rendered in Isaac Sim.
        isaac = client.get("/?rendered_by=isaac").content.decode()
        assert "Evaluated VLM" not in isaac and "Gemini-2.5-Pro-API" in isaac
        rows = csv_rows(client, "/leaderboard/overall.csv?rendered_by=mujoco")
        assert [r["model"] for r in rows] == ["Evaluated VLM"]
        api = client.get("/api/leaderboards/overall/?rendered_by=isaac").json()
        assert api and all(r["source"] == "reported" for r in api["results"])
        bad = client.get("/?rendered_by=blender")
        assert bad.status_code == 400 and "rendered_by" in bad.content.decode()
