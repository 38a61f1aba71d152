"""The public run list: a page picks its runs first, then counts their episodes."""

from __future__ import annotations

import pytest

from leaderboard.models import Run
from leaderboard.runs.selectors import run_list
from tests.leaderboard.factories import board_run

pytestmark = pytest.mark.django_db


def test_a_page_is_chosen_in_a_subquery_and_has_the_rows_of_the_whole_list(bundles):
    for n, name in enumerate(("random", "oracle", "mirror-confused")):
        board_run(bundles[name], f"Model {n}")
    everything = list(run_list())
    page = run_list()[:2]
    sql = str(page.query)
    assert " IN (SELECT" in sql, sql
    assert "LIMIT 2" in sql  # the limit is inside the subquery, not on the counted rows
    assert [r.pk for r in page] == [r.pk for r in everything[:2]]
    assert [r.pk for r in run_list()[1:3]] == [r.pk for r in everything[1:3]]
    assert run_list()[0].pk == everything[0].pk
    assert Run.objects.count() == 3
