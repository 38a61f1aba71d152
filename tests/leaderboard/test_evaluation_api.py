"""POST /api/evaluations/: a DRF input serializer; every bad body is a 400 naming the field."""

import pytest
from django.contrib.auth.models import Permission, User

from leaderboard.models import Run

pytestmark = pytest.mark.django_db


@pytest.fixture
def evaluator(client):
    user = User.objects.create_user("eve", password="pw")
    user.user_permissions.add(Permission.objects.get(codename="add_run"))
    client.force_login(user)
    return user


def body(**changes):
    data = {
        "provider": "openai",
        "model": "gpt-4o",
        "kind": "proprietary",
        "api_key": "sk-test",
        "levels": [0, 2],
        "scenes": "robot",
    }
    return {**data, **changes}


def post(client, data):
    return client.post("/api/evaluations/", data, content_type="application/json")


@pytest.mark.parametrize("raw", ["42", '"text"', "null", "[1, 2]", "true"])
def test_a_body_that_is_not_a_json_object_is_a_400(client, evaluator, raw):
    response = client.post("/api/evaluations/", raw, content_type="application/json")
    assert response.status_code == 400
    assert Run.objects.count() == 0


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"provider": "llama"}, "provider"),
        ({"levels": [9]}, "levels"),
        ({"levels": []}, "levels"),
        ({"levels": [1, 1]}, "levels"),
        ({"scenes": "everything"}, "scenes"),
        ({"kind": "human"}, "kind"),
        ({"params_b": -1}, "params_b"),
        ({"model": "x" * 201}, "model"),
        ({"base_url": "not a url"}, "base_url"),
        ({"api_key": None}, "api_key"),
        ({"release_date": "2025-02-30"}, "release_date"),
        ({"reasoning": "extreme"}, "reasoning"),
        ({"licence": "x" * 101}, "licence"),
        ({"scaffold": "robot"}, "scaffold"),
    ],
)
def test_each_bad_field_is_named_and_nothing_is_written(client, evaluator, changes, field):
    response = post(client, body(**changes))
    assert response.status_code == 400, response.content
    assert field in response.json()
    assert Run.objects.count() == 0


def test_a_refused_endpoint_is_a_field_error_from_the_service(client, evaluator, settings):
    settings.MIRRORBENCH_ALLOW_PRIVATE_ENDPOINTS = False
    response = post(client, body(base_url="http://127.0.0.1:9/v1"))
    assert response.status_code == 400
    assert list(response.json()) == ["base_url"]
    assert Run.objects.count() == 0


def test_a_good_body_queues_a_run_and_links_to_its_page(
    client, evaluator, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False):
        response = post(client, body(levels=["3", 1]))
    assert response.status_code == 201, response.content
    run = Run.objects.get()
    queued = {"run": run.pk, "status": "pending", "episodes": 36, "url": f"/runs/{run.pk}/"}
    # The one run at the top, as before several conditions, and in the list of runs queued.
    assert response.json() == {**queued, "runs": [{**queued, "condition": "main"}]}
    assert run.spec["levels"] == [1, 3]


def test_the_models_facts_go_to_its_new_entry(
    client, evaluator, django_capture_on_commit_callbacks
):
    facts = {"release_date": "2024-05-13", "reasoning": "off", "licence": "proprietary"}
    with django_capture_on_commit_callbacks(execute=False):
        response = post(client, body(scaffold="model", **facts))
    assert response.status_code == 201, response.content
    entry = Run.objects.get().model_entry
    assert entry.release_date.isoformat() == "2024-05-13"
    assert (entry.reasoning, entry.licence, entry.scaffold) == ("off", "proprietary", "model")


def test_several_conditions_queue_a_run_each_in_one_answer(
    client, evaluator, settings, django_capture_on_commit_callbacks
):
    settings.MIRRORBENCH_MAX_ACTIVE_RUNS = 3
    with django_capture_on_commit_callbacks(execute=False) as queued:
        response = post(client, body(conditions=["moved-mark", "main", "no-mirror"]))
    assert response.status_code == 201, response.content
    runs = list(Run.objects.order_by("pk"))
    # One run per condition, main first, of the same entry, each with its own sealed key.
    assert [(r.condition, r.config.condition) for r in runs] == [
        ("main", "main"),
        ("no-mirror", "no-mirror"),
        ("moved-mark", "moved-mark"),
    ]
    assert len({r.model_entry_id for r in runs}) == 1
    assert all(r.episodes_expected == 36 and hasattr(r, "secret") for r in runs)
    assert len(queued) == 3  # each run's start, once the transaction commits
    answer = response.json()
    assert answer["run"] == runs[0].pk and answer["url"] == f"/runs/{runs[0].pk}/"
    assert answer["runs"] == [
        {
            "run": r.pk,
            "condition": r.condition,
            "status": "pending",
            "episodes": 36,
            "url": f"/runs/{r.pk}/",
        }
        for r in runs
    ]


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"conditions": ["main", "mirrorless"]}, "conditions"),
        ({"conditions": ["main", "main"]}, "conditions"),
        ({"conditions": []}, "conditions"),
        ({"conditions": "main"}, "conditions"),
        ({"conditions": ["main"], "condition": "no-mirror"}, "conditions"),
        ({"condition": "mirrorless"}, "condition"),
    ],
)
def test_one_bad_condition_names_the_field_and_changes_nothing(
    client, evaluator, settings, changes, field
):
    settings.MIRRORBENCH_MAX_ACTIVE_RUNS = 4
    response = post(client, body(**changes))
    assert response.status_code == 400, response.content
    assert list(response.json()) == [field]
    assert Run.objects.count() == 0


def test_conditions_over_the_active_run_cap_are_refused_whole(client, evaluator, settings):
    settings.MIRRORBENCH_MAX_ACTIVE_RUNS = 2
    response = post(client, body(conditions=["main", "no-mirror", "moved-mark"]))
    assert response.status_code == 400
    (message,) = response.json()["non_field_errors"]
    assert "this submission adds 3 (one per condition)" in message
    assert "fewer conditions" in message
    assert Run.objects.count() == 0


def test_the_schema_documents_the_conditions_and_the_queued_runs(client):
    schema = client.get("/api/schema/?format=json").json()
    components = schema["components"]["schemas"]
    request = next(c for name, c in components.items() if "conditions" in c.get("properties", {}))
    assert request["properties"]["conditions"]["type"] == "array"
    assert "condition" in request["properties"]
    queued = components["QueuedRun"]["properties"]
    assert set(queued) == {"run", "condition", "status", "episodes", "url"}
