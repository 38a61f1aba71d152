"""Cost beside score: a run's measured tokens and dollars on the run and model pages, the API,
the cost chart (its API, table and CSV, the Pareto front), priced by the run's own prices, the
price table the admin edits, or no price."""

from __future__ import annotations

import csv
import io

import pytest

from leaderboard.boards.scores import run_tokens_refresh
from leaderboard.models import ModelPrice, Run, Step
from tests.leaderboard.factories import UserFactory, board_run, import_run

pytestmark = pytest.mark.django_db

PRICE = {"input_per_mtok": 2.5, "output_per_mtok": 10.0, "cached_input_per_mtok": 1.25}


def _measured(bundle, name, *, input_tokens, output_tokens=50, cached=None):
    """A listed run of the random bundle whose steps report these tokens each."""
    run = import_run(bundle, name)
    steps = Step.objects.filter(episode__run=run)
    steps.update(input_tokens=input_tokens, output_tokens=output_tokens, cached_input_tokens=cached)
    run_tokens_refresh(run=run)
    run.refresh_from_db()
    return run, steps.count()


def test_a_run_without_a_price_says_so_and_one_with_a_price_shows_its_dollars(client, bundles):
    run, steps = _measured(bundles["random"], "Thrifty VLM", input_tokens=1000, cached=200)
    assert (run.input_tokens, run.output_tokens) == (1000 * steps, 50 * steps)
    assert run.cached_input_tokens == 200 * steps

    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert "no price" in page and "the site knows no price for <code>random</code>" in page
    cost = client.get(f"/api/runs/{run.pk}/").json()["cost"]
    assert cost["cost_usd"] is None and cost["price_source"] is None
    assert cost["cached_share"] == 0.2

    ModelPrice.objects.create(agent="random", **PRICE, source="a test")
    # 800 fresh + 200 cached input tokens and 50 output ones a step.
    dollars = steps * (800 * 2.5 + 200 * 1.25 + 50 * 10.0) / 1e6
    cost = client.get(f"/api/runs/{run.pk}/").json()["cost"]
    assert cost["cost_usd"] == pytest.approx(dollars, abs=1e-3)
    assert cost["price_source"] == "table"
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert f"${dollars:.2f}" in page and "at the site&#x27;s price table" in page
    model = client.get(f"/models/{run.model_entry.slug}/").content.decode()
    assert f"${dollars:.2f}" in model and "from the provider's cache, 20%" in model
    listed = client.get("/api/runs/").json()["results"]
    assert next(r for r in listed if r["id"] == run.pk)["cost"]["price_source"] == "table"

    # Prices given for the run come first.
    Run.objects.filter(pk=run.pk).update(price={"input_per_mtok": 0, "output_per_mtok": 0})
    cost = client.get(f"/api/runs/{run.pk}/").json()["cost"]
    assert cost["cost_usd"] == 0.0 and cost["price_source"] == "run"


def test_the_cost_chart_draws_priced_runs_and_the_pareto_front(client, bundles):
    cheap, steps = _measured(bundles["random"], "Thrifty VLM", input_tokens=1000)
    _measured(bundles["oracle"], "Sharp VLM", input_tokens=4000)
    dear, _ = _measured(bundles["random"], "Pricey VLM", input_tokens=9000)
    # Without its steps: a baseline's steps report no tokens, so its totals are null either way.
    board_run(bundles["mirror-confused"], "Unpriced VLM")
    ModelPrice.objects.create(agent="random", input_per_mtok=2.5, output_per_mtok=10.0)
    ModelPrice.objects.create(agent="oracle", input_per_mtok=2.5, output_per_mtok=10.0)

    chart = client.get("/api/charts/cost/").json()
    traces = {t["name"]: t for t in chart["figure"]["data"]}
    front = traces["Pareto front"]
    # The oracle scores more for more money; the pricey random run, as much as the cheap one
    # for more: it is beaten.
    assert front["y"][0] < front["y"][1] and len(front["x"]) == 2
    assert front["x"][0] == pytest.approx(steps * (1000 * 2.5 + 50 * 10.0) / 1e6, abs=1e-3)
    table = chart["table"]
    assert table["columns"][3] == "$ per 264 episodes"
    rows = {row[0]: row for row in table["rows"]}
    assert rows["Thrifty VLM"][-1] == "yes" and rows["Pricey VLM"][-1] == ""
    assert rows["Unpriced VLM"][3] == "no price"
    assert "No price, not drawn: Unpriced VLM" in table["note"]
    assert "Pricey VLM" in traces["Open weights"]["text"]

    response = client.get("/charts/cost.csv")
    csv_rows = {r["model"]: r for r in csv.DictReader(io.StringIO(response.content.decode()))}
    assert csv_rows["Sharp VLM"]["pareto_front"] == "true"
    assert csv_rows["Unpriced VLM"]["price_source"] == "no price"
    assert float(csv_rows["Pricey VLM"]["cost_per_264_usd"]) > float(
        csv_rows["Thrifty VLM"]["cost_per_264_usd"]
    )
    page = client.get("/charts/").content.decode()
    assert "Cost against performance" in page and "/api/charts/cost/" in page
    assert dear.pk != cheap.pk


def test_the_cost_chart_refuses_a_bad_version_naming_it(client):
    response = client.get("/api/charts/cost/?version=v99")
    assert response.status_code == 400 and "version" in response.json()


def _evaluator(client):
    user = UserFactory(username="eve", permissions=["leaderboard.add_run"])
    client.force_login(user)
    return user


def _body(**changes):
    data = {
        "provider": "openai",
        "model": "gpt-4o",
        "kind": "proprietary",
        "api_key": "sk-test",
        "levels": [0],
        "scenes": "robot",
    }
    return {**data, **changes}


def test_prices_given_at_evaluation_are_the_runs_own(client, django_capture_on_commit_callbacks):
    _evaluator(client)
    price = {"input_per_mtok": 2.5, "output_per_mtok": 10, "cached_input_per_mtok": 1.25}
    with django_capture_on_commit_callbacks(execute=False):
        response = client.post(
            "/api/evaluations/", _body(price=price), content_type="application/json"
        )
    assert response.status_code == 201, response.content
    run = Run.objects.get(pk=response.json()["run"])
    assert run.price == {
        "input_per_mtok": 2.5,
        "output_per_mtok": 10.0,
        "cached_input_per_mtok": 1.25,
    }


@pytest.mark.parametrize(
    ("price", "message"),
    [
        ({"input_per_mtok": 2.5}, "output_per_mtok: required"),
        ({"input_per_mtok": -1, "output_per_mtok": 1}, "input_per_mtok: expected a number"),
        ("cheap", "expected an object"),
    ],
)
def test_a_bad_price_is_a_400_naming_the_field(client, price, message):
    _evaluator(client)
    response = client.post("/api/evaluations/", _body(price=price), content_type="application/json")
    assert response.status_code == 400
    assert message in response.json()["price"][0]
    assert not Run.objects.exists()
