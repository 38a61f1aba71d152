"""The figure builders (leaderboard.charts.figures): each chart's numbers are the tables'."""

from __future__ import annotations

import pytest

from evaluation.metrics import cognitive_stability, cognitive_stability_ci
from leaderboard.boards.entries import benchmark_current, model_entry_upsert
from leaderboard.boards.scores import run_scores_refresh
from leaderboard.boards.selectors import LeaderboardFilters, leaderboard_table, tracks_page
from leaderboard.charts import figures
from leaderboard.charts.selectors import (
    ChartRun,
    best_model_slug,
    chart_runs,
    chart_runs_for,
    default_slugs,
    runs_by_model,
)
from leaderboard.models import Episode, ModelEntry, Run, RunScore
from leaderboard.runs.imports import reference_results_load
from leaderboard.runs.selectors import run_results
from tests.leaderboard.factories import board_run

LEVELS = ("0", "1", "2", "3")


def tables(base: float) -> dict[str, dict[str, dict[str, float]]]:
    """Level tables whose Overall metrics fall by 0.1 a level from ``base``."""
    out = {}
    for i, level in enumerate(LEVELS):
        value = base - 0.1 * i
        out[level] = {"overall": {m: value for m in ("tsr", "sir", "fcr", "pcr", "avg")}}
    out["overall"] = {"overall": {m: base - 0.15 for m in ("tsr", "sir", "fcr", "pcr", "avg")}}
    return out


def chart_run(run_id, model, kind, *, cs=None, params_b=None, source="evaluated", levels=True):
    run_tables = tables(0.1 * run_id)
    if not levels:
        run_tables = {"overall": run_tables["overall"]}
    return ChartRun(
        run_id=run_id,
        model=model,
        slug=model.lower(),
        kind=kind,
        params_b=params_b,
        source=source,
        cognitive_stability=cs,
        cognitive_stability_ci=(cs - 0.5, cs + 0.25) if cs is not None else None,
        tables=run_tables,
    )


@pytest.fixture
def board():
    """Two proprietary, two open-weights models, the random baseline, a reported row."""
    return [
        chart_run(5, "Alpha", "proprietary", cs=1.5),
        chart_run(4, "Beta", "open-weights", cs=0.5, params_b=72.0),
        chart_run(3, "Gamma", "open-weights", cs=-0.25, params_b=8.0),
        chart_run(2, "Random", "baseline", cs=0.05),
        chart_run(1, "Paper", "proprietary", source="reported", levels=False),
    ]


def trace_points(figure):
    return {trace["name"]: len(trace.get("x") or trace.get("r")) for trace in figure["data"]}


def test_the_stability_chart_has_one_bubble_per_model_with_per_scene_results(board):
    chart = figures.stability_figure(board)
    figure = chart.figure
    assert trace_points(figure) == {"Proprietary": 1, "Open weights": 2, "Baseline": 1}
    by_name = {}
    for trace in figure["data"]:
        for name, x, y in zip(trace["text"], trace["x"], trace["y"], strict=True):
            by_name[name] = (x, y)
    assert by_name["Beta"] == (pytest.approx(0.25), 0.5)
    assert by_name["Alpha"] == (pytest.approx(0.35), 1.5)
    assert "Paper" not in by_name
    assert chart.table.note.startswith("1 model of the leaderboard is not on this chart")
    assert "per-scene results" in chart.table.note


def test_open_weights_bubbles_grow_with_parameters_and_proprietary_ones_are_fixed(board):
    figure = figures.stability_figure(board).figure
    traces = {trace["name"]: trace for trace in figure["data"]}
    assert traces["Open weights"]["marker"]["size"] == [72.0, 8.0]
    assert traces["Open weights"]["marker"]["sizemode"] == "area"
    assert traces["Proprietary"]["marker"]["size"] == 16
    assert traces["Baseline"]["marker"]["size"] == 16


def test_the_quadrant_lines_are_cs_zero_and_the_random_policys_avg(board):
    shapes = figures.stability_figure(board).figure["layout"]["shapes"]
    vertical, horizontal = shapes
    assert vertical["x0"] == vertical["x1"] == pytest.approx(0.05)
    assert horizontal["y0"] == horizontal["y1"] == 0
    without_random = [run for run in board if run.slug != "random"]
    assert figures.stability_figure(without_random).figure["layout"]["shapes"][0]["x0"] == 0


def test_the_stability_table_has_the_charts_numbers(board):
    table = figures.stability_table(board)
    assert table.columns[-2:] == ["CS", "CS 95% CI"]
    assert [row[0] for row in table.rows] == ["Alpha", "Beta", "Gamma", "Random"]
    assert table.rows[1][4:] == ["0.250", "0.500", "0.000 to 0.750"]


def test_the_stability_ranking_puts_the_highest_on_top_with_its_interval(board):
    chart = figures.stability_ranking_figure(board)
    layout = chart.figure["layout"]
    assert layout["yaxis"]["categoryarray"] == ["Gamma", "Random", "Beta", "Alpha"]
    proprietary = next(t for t in chart.figure["data"] if t["name"] == "Proprietary")
    assert proprietary["x"] == [1.5]
    assert proprietary["error_x"]["array"] == [0.25]
    assert proprietary["error_x"]["arrayminus"] == [0.5]
    assert layout["shapes"][0]["x0"] == 0.05
    assert [row[1] for row in chart.table.rows] == ["Alpha", "Beta", "Random", "Gamma"]
    assert chart.table.rows[0][3:] == ["1.500", "1.000 to 1.750"]


def test_the_radar_has_a_closed_line_per_model_and_level_on_a_common_scale(board):
    picked = board[:2] + board[4:]
    chart = figures.radar_figure(picked)
    data = chart.figure["data"]
    assert len(data) == 2 * 4
    first = data[0]
    assert first["r"] == [0.5, 0.5, 0.5, 0.5, 0.5] and first["theta"][0] == first["theta"][-1]
    assert [trace["subplot"] for trace in data[:4]] == ["polar", "polar2", "polar3", "polar4"]
    assert [trace["showlegend"] for trace in data[:4]] == [True, False, False, False]
    layout = chart.figure["layout"]
    assert layout["polar"]["radialaxis"]["range"] == layout["polar4"]["radialaxis"]["range"]
    assert chart.table.note == (
        "Paper has no level tables (the paper reports only an overall row), so no line."
    )
    assert len(chart.table.rows) == 8
    assert chart.narrow["height"] > chart.figure["layout"]["height"]


def test_the_trajectories_have_one_line_per_model_and_metric_with_the_level_values(board):
    chart = figures.trajectories_figure(board[:3])
    data = chart.figure["data"]
    assert len(data) == 3 * 4
    alpha_tsr = data[0]
    assert alpha_tsr["x"] == [0, 1, 2, 3]
    assert alpha_tsr["y"] == pytest.approx([0.5, 0.4, 0.3, 0.2])
    assert chart.table.rows[0] == ["Alpha", "TSR", "0.500", "0.400", "0.300", "0.200"]
    assert set(chart.narrow) >= {"xaxis", "yaxis4", "annotations"}


def test_model_names_cannot_inject_markup_or_hover_fields():
    run = chart_run(1, "<b>x</b> %{y}", "proprietary", cs=1.0)
    trace = figures.trajectories_figure([run]).figure["data"][0]
    assert "<b>x</b>" not in trace["name"] and "%{y}" not in trace["hovertemplate"].split("<br>")[0]
    assert figures.stability_table([run]).rows[0][0] == "<b>x</b> %{y}"


def test_every_chart_downloads_png_and_says_its_filename(board):
    document = figures.chart_json(figures.stability_figure(board))
    config = document["config"]
    assert config["toImageButtonOptions"] == {
        "format": "png",
        "filename": "mirrorbench-stability-vs-performance",
        "scale": 2,
    }
    assert config["displaylogo"] is False
    assert set(document) == {"figure", "config", "narrow", "table"}


def test_the_palette_is_okabe_ito():
    assert set(figures.OKABE_ITO.values()) >= {
        "#E69F00",
        "#56B4E9",
        "#009E73",
        "#F0E442",
        "#0072B2",
        "#D55E00",
        "#CC79A7",
        "#000000",
    }
    colours = {c for c, _ in figures.KIND_STYLES.values()} | {c for c, *_ in figures.SERIES_STYLES}
    assert colours <= set(figures.OKABE_ITO.values())


# From the database: the chart selectors read what the tables read.


@pytest.fixture(scope="class")
def paper_and_baselines(class_rows, bundles):
    """The paper's rows, the random and the mirror-confused baselines evaluated here."""
    with class_rows():
        reference_results_load()
        random = board_run(bundles["random"], "Random", kind=ModelEntry.Kind.BASELINE)
        confused = board_run(bundles["mirror-confused"], "Mirror-Confused", kind="baseline")
    return random, confused


@pytest.mark.django_db
def test_the_stored_stability_of_a_hand_computed_run_follows_appendix_a_a():
    # Scene a: AVG 1 -> 0.375 -> 0.375 -> 0 gives +1 + 0 + 1 = 2; scene b: 0 -> 0.375 ->
    # -0.25 -> 1 gives -1 + 1 - 1 = -1; robot scene r: 0.375 -> 0 -> -0.25 -> -0.25 gives 2.
    benchmark = benchmark_current()
    entry = model_entry_upsert(name="Hand", kind=ModelEntry.Kind.PROPRIETARY)
    run = Run.objects.create(
        model_entry=entry, benchmark=benchmark, source=Run.Source.VERIFIED, status="completed"
    )
    human = list(benchmark.scenes.filter(track="Human")[:2])
    robot = benchmark.scenes.filter(track="Robot").first()
    one, three_eighths, zero, minus = (4, 3, 2, 1), (3, 2, 2), (3, 3, 3), (3, 4, 5)
    plan = {
        human[0]: [one, three_eighths, three_eighths, zero],
        human[1]: [zero, three_eighths, minus, one],
        robot: [three_eighths, zero, minus, minus],
    }
    Episode.objects.bulk_create(
        Episode(run=run, scene=scene, level=level, status="completed", distances=list(d))
        for scene, trajectories in plan.items()
        for level, d in enumerate(trajectories)
    )
    run_scores_refresh(run=run, n_resamples=100)
    run.refresh_from_db()
    assert run.cognitive_stability == 1.0
    low, high = run.cognitive_stability_ci
    assert low <= 1.0 <= high


@pytest.mark.django_db
class TestThePapersRowsAndTwoBaselines:
    """Made once for the class: the paper's rows and the two baselines' runs."""

    def test_a_runs_cognitive_stability_is_stored_with_its_scores_as_the_metrics_module_says(
        self,
        paper_and_baselines,
    ):
        random, _ = paper_and_baselines
        random.refresh_from_db()
        results = run_results(run=random)
        assert random.cognitive_stability == cognitive_stability(results)
        assert random.cognitive_stability_ci == list(cognitive_stability_ci(results))
        reported = Run.objects.filter(source=Run.Source.REPORTED)
        assert reported.exists()
        assert not reported.exclude(cognitive_stability=None).exists()

    def test_chart_runs_hold_the_leaderboards_numbers(self, paper_and_baselines):
        runs = chart_runs()
        board = leaderboard_table(table="overall", filters=LeaderboardFilters())
        by_run = {run.run_id: run for run in runs}
        assert set(by_run) == set(board.frame["run_id"])
        for record in board.frame.to_dict("records"):
            run = by_run[record["run_id"]]
            assert run.overall_avg == record["overall_avg"]
            assert run.tables["overall"]["robot"]["fcr"] == record["robot_fcr"]
        level_2 = RunScore.objects.get(run_id=runs[1].run_id, table="2", track="overall")
        assert runs[1].tables["2"]["overall"]["pcr"] == level_2.pcr
        assert [run.overall_avg for run in runs] == sorted(
            (run.overall_avg for run in runs), reverse=True
        )

    def test_a_model_is_charted_by_its_run_with_per_scene_results(self, paper_and_baselines):
        random, _ = paper_and_baselines
        runs = chart_runs(slugs=["random"])
        assert {run.source for run in runs} == {"reported", "evaluated"}
        assert runs_by_model(runs)["random"].run_id == random.pk
        assert chart_runs_for(version="v3", slugs=["random", "gpt-41-api", "nobody"]) == [
            runs_by_model(runs)["random"],
            *chart_runs(slugs=["gpt-41-api"]),
        ]

    def test_the_default_models_are_the_three_best_with_levels_and_random(
        self, paper_and_baselines
    ):
        assert default_slugs(chart_runs()) == [
            "gemini-25-pro-api",
            "gemini-25-flash-api",
            "gpt-41-api",
            "random",
        ]
        assert best_model_slug() == "gemini-25-pro-api"

    def test_the_tracks_chart_draws_table_iii(self, paper_and_baselines):
        page = tracks_page()
        chart = figures.tracks_figure(page.table_iii, page.models)
        bars = {trace["name"]: trace["y"] for trace in chart.figure["data"]}
        assert set(bars) == {"Human", "Robot", "Overall"}
        for track in ("human", "robot", "overall"):
            expected = [page.table_iii[row][track] for row in ("0", "1", "2", "3", "avg")]
            assert bars[track.capitalize()] == expected
        # The paper's Table III, to its three decimals (the paper's 18 MLLM rows).
        assert chart.table.rows[0] == ["Level 0", "0.131", "-0.076", "0.076"]
        assert chart.table.rows[-1] == ["Average", "0.046", "-0.183", "-0.015"]
