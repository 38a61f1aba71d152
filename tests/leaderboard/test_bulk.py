"""rows_insert: the rows bulk_create would store, from plain dicts, in one statement."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from evaluation.bundle import read_bundle
from leaderboard.bulk import rows_insert
from leaderboard.models import Episode, Frame, Scene, Step
from tests.leaderboard.factories import import_run, make_bundle

pytestmark = pytest.mark.django_db

STEP_FIELDS = [f.attname for f in Step._meta.concrete_fields if f.attname != "id"]


@pytest.fixture
def stored(tmp_path):
    """A random run's bundle imported with its steps, and the bundle's records."""
    bundle = make_bundle(tmp_path / "random.jsonl", "random", scenes="robot", levels=(0, 3))
    run = import_run(bundle, "Random")
    return run, read_bundle(bundle)


def test_steps_inserted_from_dicts_equal_those_bulk_create_makes(stored):
    run, bundle = stored
    episodes = list(Episode.objects.filter(run=run).order_by("pk"))
    imported = list(Step.objects.filter(episode__run=run).order_by("pk").values(*STEP_FIELDS))
    # JSON (the hand's cell), nulls (a baseline's tokens) and text, all read back as written.
    assert imported and all(len(s["hand_cell"]) == 3 for s in imported)
    assert all(s["input_tokens"] is None and s["response"] for s in imported)
    Step.objects.filter(episode__run=run).delete()
    Step.objects.bulk_create(
        Step.from_record(episode.pk, step)
        for episode, record in zip(episodes, bundle.episodes, strict=True)
        for step in record["steps"]
    )
    by_orm = list(Step.objects.filter(episode__run=run).order_by("pk").values(*STEP_FIELDS))
    assert imported == by_orm


def test_a_left_out_field_takes_its_default_and_auto_now_add_the_time(stored):
    scene = Scene.objects.first()
    before = timezone.now()
    assert rows_insert(Frame, [{"key": "k1", "scene_id": scene.pk, "cell": [1, 0, -1], "size": 8}])
    frame = Frame.objects.get(pk="k1")
    assert frame.cell == [1, 0, -1] and frame.mirror is True and frame.stored is None
    assert frame.condition == Frame._meta.get_field("condition").get_default()
    assert frame.created >= before


def test_values_are_cast_as_the_orm_casts_them_and_a_bad_one_stores_nothing(stored):
    scene = Scene.objects.first()
    rows_insert(Frame, [{"key": "k2", "scene_id": str(scene.pk), "cell": [], "size": "16"}])
    assert Frame.objects.get(pk="k2").size == 16
    count = Frame.objects.count()
    with pytest.raises(ValueError, match="size"), transaction.atomic():
        rows_insert(
            Frame,
            [
                {"key": "k3", "scene_id": scene.pk, "cell": [], "size": 8},
                {"key": "k4", "scene_id": scene.pk, "cell": [], "size": "big"},
            ],
        )
    assert Frame.objects.count() == count


def test_ignore_conflicts_keeps_the_row_already_there_and_adds_the_new_ones(stored):
    scene = Scene.objects.first()
    rows_insert(Frame, [{"key": "same", "scene_id": scene.pk, "cell": [0, 0, 0], "size": 8}])
    rows = [
        {"key": "same", "scene_id": scene.pk, "cell": [9, 9, 9], "size": 99},
        {"key": "new", "scene_id": scene.pk, "cell": [1, 1, 1], "size": 8},
    ]
    assert rows_insert(Frame, rows, ignore_conflicts=True) == 2
    assert Frame.objects.get(pk="same").size == 8 and Frame.objects.get(pk="new").size == 8
    with pytest.raises(IntegrityError), transaction.atomic():
        rows_insert(Frame, rows)
    assert rows_insert(Frame, []) == 0


def test_a_value_of_another_type_is_cast_and_a_callable_default_is_called_for_each_row(
    stored, monkeypatch
):
    scene = Scene.objects.first()
    keys = ["true-1", "true-2"]
    rows_insert(Frame, [{"key": k, "scene_id": scene.pk, "cell": [], "size": True} for k in keys])
    assert list(Frame.objects.filter(key__in=keys).values_list("size", flat=True)) == [1, 1]
    episode = Episode.objects.first()
    steps = [{**Step.values_from_record(episode.pk, _step(i)), "index": 900 + i} for i in (1, 2)]
    for step in steps:
        del step["hand_cell"]  # default=list: called for each row, as the ORM does
    rows_insert(Step, steps)
    assert list(
        Step.objects.filter(episode=episode, index__gte=900).values_list("hand_cell", flat=True)
    ) == [[], []]
    # A callable default gives each row its own value, as the ORM calls it for each instance.
    calls = iter(range(1, 10))

    def counting() -> dict[str, int]:
        return {"n": next(calls)}

    field = Step._meta.get_field("request")
    monkeypatch.setattr(field, "default", counting)
    # Field.get_default calls a cached property made from the first default it saw: set it too,
    # so that the undo puts the field back whole (a leaked counter ran out in later tests).
    monkeypatch.setitem(field.__dict__, "_get_default", counting)
    for step in steps:
        step["index"] += 10
        del step["request"]
    rows_insert(Step, steps)
    assert list(
        Step.objects.filter(episode=episode, index__gte=910).values_list("request", flat=True)
    ) == [{"n": 1}, {"n": 2}]


def _step(index: int) -> dict[str, object]:
    step = Step.objects.first()
    assert step is not None
    return {**step.as_record(), "index": index}
