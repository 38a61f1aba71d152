"""Process metrics on a table of labelled answers: mirror mentions, own reflection, stated
direction against the chosen option (evaluation.process_metrics)."""

from __future__ import annotations

import json

import pytest

from evaluation.cli import main
from evaluation.process_metrics import (
    ATTRIBUTION,
    METHOD,
    claims_own_reflection,
    mentions_mirror,
    process_json,
    stated_direction,
    step_flags,
)

SCENE = "male_1-mano_brown-leaf_0"

# (answer, mentions a mirror, says the reflection is its own): labelled by reading them.
ATTRIBUTION_TABLE = [
    ("The image shows a room with a wooden floor and a hand.\nChoice: [6]", False, False),
    ("There is a mirror in front of me.\nChoice: [6]", True, False),
    ("I can see my reflection in the mirror, the mark is on my chest.\nChoice: 1", True, True),
    ("The reflected body is me, so the mark is on my own front.\nChoice: [6]", True, True),
    ("In the reflection I see myself; the hand is left of the mark.\nChoice: [3]", True, True),
    ("The figure in the mirror is my body seen from the front.\nChoice: [6]", True, True),
    ("The mirror shows my hand above the mark.\nChoice: [2]", True, True),
    ("There is no mirror here, only a person facing a wall.\nChoice: [5]", False, False),
    ("I don't see any mirror or reflection in this scene.\nChoice: [5]", False, False),
    ("The person in the mirror is someone else, not me.\nChoice: [5]", True, False),
    (
        "Another robot stands behind a reflective panel; its reflection moves.\nChoice: 5",
        True,
        False,
    ),
    ("My body hides my hand from the camera.\nChoice: [6]", False, False),
    ("Reflections on the floor are faint. Moving back.\nChoice: [6]", True, False),
    ("This reflects my plan to move back.\nChoice: [6]", False, False),
    ("The mirrored image is mine: the hand I move moves there too.\nChoice: [1]", True, True),
    ("That's me in the reflection.\nChoice: [6]", True, True),
    ("", False, False),
]


@pytest.mark.parametrize(("text", "mirror", "own"), ATTRIBUTION_TABLE)
def test_mirror_attribution_reads_each_labelled_answer_as_labelled(text, mirror, own):
    assert mentions_mirror(text) is mirror
    assert claims_own_reflection(text) is own


# (answer, the direction its reasoning states: an option or None).
DIRECTION_TABLE = [
    ("Thought: the hand is above the mark, so I should move down.\nChoice: [2]", 2),
    ("Thought: I will move backward towards the camera.\nChoice: [6]", 6),
    ("Thought: move the hand a little to the left.\nChoice: 3", 3),
    ("Thought: not forward; go up instead.\nChoice: [1]", 1),
    (
        "Thought: I must never move forward. The mark is right of the hand: move right.\nChoice: 4",
        4,
    ),
    ("Thought: rather than moving left, I'll shift up.\nChoice: [1]", 1),
    ("Thought: I don't want to go back again. Going up.\nChoice: [1]", 1),
    ("Thought: the mark is to the right.\nChoice: [4]", None),
    ("Thought: move backward.", None),
    ("Thought: that's right, the hand collided.\nChoice: [3]", None),
    ("Step 0: keep moving backward (6).\nSummary: move backward.\nChoice: [6]", 6),
    ("Thought: I'll move forward.\nChoice: [6]", 5),
]


@pytest.mark.parametrize(("text", "stated"), DIRECTION_TABLE)
def test_the_stated_direction_of_each_labelled_answer(text, stated):
    assert stated_direction(text) == stated


def test_a_step_contradicts_itself_only_when_it_states_one_direction_and_chooses_another():
    assert step_flags("Thought: I'll move forward.\nChoice: [6]", 6).contradiction
    assert not step_flags("Thought: I'll move forward.\nChoice: [5]", 5).contradiction
    assert not step_flags("Thought: the mark is near.\nChoice: [5]", 5).contradiction
    assert not step_flags("Thought: move up.\nChoice: [9]", None).contradiction


def _episode(level: int, track: str, responses: list[tuple[str, int | None]]) -> dict:
    return {
        "level": level,
        "track": track,
        "status": "completed",
        "steps": [{"response": text, "option": option} for text, option in responses],
    }


def test_process_json_counts_by_level_and_track_and_pools_l2_and_l3():
    episodes = [
        _episode(0, "Human", [("Thought: move back, the mirror shows it.\nChoice: [6]", 6)]),
        _episode(
            2,
            "Human",
            [
                ("Thought: my reflection is in the mirror; move up.\nChoice: [1]", 1),
                ("Thought: move up.\nChoice: [2]", 2),
            ],
        ),
        _episode(3, "Robot", [("Thought: a wall.\nChoice: [5]", 5), ("", None)]),
        {**_episode(3, "Robot", [("There is a mirror.\nChoice: [5]", 5)]), "status": "error"},
    ]
    doc = process_json(episodes)
    assert doc["method"] == METHOD
    level0 = doc["levels"]["0"]["overall"]
    # Level 0's prompt names the mirror: no attribution there, but consistency counts.
    assert level0["mirror_share"] is None and level0["consistency"] == 1.0
    level2 = doc["levels"]["2"]["human"]
    assert level2 == {
        "responses": 2,
        "mirror_mentions": 1,
        "mirror_share": 0.5,
        "own_reflection": 1,
        "own_share": 0.5,
        "stated_direction": 2,
        "consistent": 1,
        "consistency": 0.5,
    }
    assert doc["levels"]["2"]["robot"]["responses"] == 0
    assert doc["levels"]["2"]["robot"]["mirror_share"] is None
    pooled = doc[ATTRIBUTION]["overall"]
    # The empty response and the errored episode are left out.
    assert (pooled["responses"], pooled["mirror_mentions"], pooled["own_reflection"]) == (3, 1, 1)
    assert doc["overall"]["overall"]["stated_direction"] == 3
    assert doc["overall"]["overall"]["mirror_share"] is None


def test_score_reports_the_process_metrics_of_a_bundle_with_responses(tmp_path, capsys):
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            [
                "Thought: my reflection is in the mirror; move backward.\nChoice: [6]",
                "Thought: I'll move up.\nChoice: [2]",
            ]
        )
    )
    out = tmp_path / "scripted.jsonl"
    args = ["run", "--agent", f"scripted:{script}", "--scenes", SCENE, "--levels", "0,3"]
    assert main([*args, "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["score", str(out), "--json"]) == 0
    process = json.loads(capsys.readouterr().out)["process"]
    level3 = process["levels"]["3"]["overall"]
    steps = level3["responses"]
    # The first step names its reflection and keeps its word; every later one contradicts it.
    assert (level3["mirror_mentions"], level3["own_reflection"]) == (1, 1)
    assert (level3["stated_direction"], level3["consistent"]) == (steps, 1)
    assert process["levels"]["0"]["overall"]["mirror_share"] is None
    assert main(["score", str(out)]) == 0
    text = capsys.readouterr().out
    assert f"Process metrics ({METHOD}" in text
    assert f"naming a mirror or reflection: {100 / steps:.1f}% (1 of {steps})" in text


def test_a_baseline_states_no_direction_and_names_no_mirror(tmp_path, capsys):
    out = tmp_path / "chest.jsonl"
    run = ["run", "--agent", "chest", "--scenes", SCENE, "--levels", "3", "--out", str(out)]
    assert main(run) == 0
    capsys.readouterr()
    assert main(["score", str(out), "--json"]) == 0
    level3 = json.loads(capsys.readouterr().out)["process"]["levels"]["3"]["overall"]
    assert level3["responses"] > 0
    assert (level3["mirror_share"], level3["stated_direction"], level3["consistency"]) == (
        0,
        0,
        None,
    )
