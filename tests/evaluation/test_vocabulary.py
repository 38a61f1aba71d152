"""The benchmark's words are defined once: everything else takes them from the vocabulary."""

import re
from pathlib import Path

import pytest

from evaluation import vocabulary
from evaluation.bundle import schema
from evaluation.vocabulary import (
    FINISHED,
    LEVEL_KEYS,
    LEVELS,
    METRIC_NAMES,
    METRICS,
    OUTCOMES,
    TABLES,
    TRACK_KEYS,
    TRACKS,
    episode_outcome,
    parse_levels,
)
from simulation.catalogue import scene_set

ROOT = Path(__file__).resolve().parents[2]


def test_the_lists_agree_with_each_other_and_the_catalogue():
    assert tuple(str(level) for level in LEVELS) == LEVEL_KEYS
    assert (*LEVEL_KEYS, "overall") == TABLES
    assert set(TRACK_KEYS.values()) == {scene.track for scene in scene_set().values()}
    assert (*TRACK_KEYS, "overall") == TRACKS
    assert set(METRIC_NAMES) == set(METRICS) and METRICS[-1] == "avg"


@pytest.mark.parametrize(
    ("text", "levels"), [("2,0", (0, 2)), ("3", (3,)), (" 1, 1 ,", (1,)), ("0,1,2,3", LEVELS)]
)
def test_levels_are_read_from_a_comma_separated_list(text, levels):
    assert parse_levels(text) == levels


@pytest.mark.parametrize("text", ["", "4", "0,x", "-1", ","])
def test_a_list_naming_no_level_is_refused_listing_the_levels(text):
    with pytest.raises(ValueError, match="list of 0, 1, 2, 3"):
        parse_levels(text)


def test_the_bundle_schema_takes_the_vocabularys_levels_and_finished_statuses():
    defs = schema()["$defs"]
    episode = defs["episode"]["properties"]
    assert episode["level"]["enum"] == list(LEVELS)
    assert episode["status"]["enum"] == list(FINISHED)
    selection = defs["header"]["properties"]["selection"]["properties"]
    assert selection["levels"]["items"]["enum"] == list(LEVELS)


def test_an_episode_comes_to_one_outcome_once_finished():
    assert episode_outcome("completed", True) == "success"
    assert episode_outcome("completed", False) == "failure"
    assert episode_outcome("error", False) == "error"
    assert episode_outcome("running", False) is None
    assert {"success", "failure", "error"} <= set(OUTCOMES)


WRITTEN_OUT = {
    "the levels": re.compile(
        r"\(0, 1, 2, 3\)|\[0, 1, 2, 3\]|\"0\", \"1\", \"2\", \"3\"|\"0123\"|\"L0\", \"L1\""
    ),
    "the metric names": re.compile(r"\"tsr\", \"sir\", \"fcr\", \"pcr\""),
}
"""Lists that were written out in many places before the vocabulary (simulation/ is left out:
it knows no levels or metrics, and its ``[0, 1, 2, 3]`` are a quad's vertices)."""


@pytest.mark.parametrize("what", WRITTEN_OUT)
def test_the_product_code_does_not_write_out_the_vocabulary_again(what):
    defined_here = Path(vocabulary.__file__).resolve()
    found = [
        f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, match.start()) + 1}"
        for package in ("evaluation", "leaderboard", "mirrorbench_site")
        for path in sorted((ROOT / package).rglob("*.py"))
        if path.resolve() != defined_here and "migrations" not in path.parts
        for text in [path.read_text()]
        for match in WRITTEN_OUT[what].finditer(text)
    ]
    assert not found, f"{what} written out again (take them from evaluation.vocabulary): {found}"
