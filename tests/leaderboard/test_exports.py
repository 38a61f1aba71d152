"""CSV downloads: numbers stay numbers, text a spreadsheet would run as a formula does not."""

from __future__ import annotations

import csv
import io

import pytest

from leaderboard.exports import csv_cell, csv_text
from tests.leaderboard.factories import board_run


@pytest.mark.parametrize(
    ("value", "cell"),
    [
        ('=HYPERLINK("http://x","y")', '\'=HYPERLINK("http://x","y")'),
        ("+1+1", "'+1+1"),
        ("-2+3", "'-2+3"),
        ("@SUM(A1:A2)", "'@SUM(A1:A2)"),
        ("\tcmd", "'\tcmd"),
        ("\rcmd", "'\rcmd"),
        ("GPT-4o", "GPT-4o"),
        ("", ""),
        (-0.5564, "-0.556"),
        (0.1, "0.100"),
        (-3, "-3"),
        (12, "12"),
        (None, ""),
        (float("nan"), ""),
    ],
)
def test_a_cell_is_a_number_or_harmless_text(value, cell) -> None:
    assert csv_cell(value) == cell


def test_a_document_quotes_what_needs_quoting() -> None:
    text = csv_text(["model", "score"], [['Say "hi", =1', -1.0]])
    assert list(csv.reader(io.StringIO(text))) == [["model", "score"], ['Say "hi", =1', "-1.000"]]


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["/leaderboard/overall.csv", "/leaderboard/level-2.csv"])
def test_a_model_named_like_a_formula_is_neutralised_in_the_download(client, bundles, url) -> None:
    board_run(bundles["mirror-confused"], "=cmd|' /C calc'!A0", params_b=7.0)
    rows = list(csv.DictReader(io.StringIO(client.get(url).content.decode())))
    assert [row["model"] for row in rows] == ["'=cmd|' /C calc'!A0"]
    assert rows[0]["params_b"] == "7"
    assert rows[0]["rank"] == "1"
    assert float(rows[0]["overall_fcr"]) < 0  # a negative score is still a number
    assert not rows[0]["overall_fcr"].startswith("'")
