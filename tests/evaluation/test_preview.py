"""The prompt of any step: play given options, then read what the model would be sent."""

import pytest

from evaluation.messages import ImagePart
from evaluation.preview import EpisodeOver, parse_moves, prompt_after
from evaluation.prompts import BENIGN_NOTE, CHOICE_LINE, messages_as_text
from simulation.backends import renderer_version
from simulation.catalogue import get_scene
from simulation.renderer import frame_key

SCENE = get_scene("male_0-mano_white-splash")


def test_it_plays_the_moves_and_reports_each_with_its_feedback():
    # Five moves backward reach the body's front; the sixth is refused (the hand is in contact).
    preview = prompt_after(SCENE, 1, [6, 6, 6, 6, 6, 6, 3], 256)
    text = messages_as_text(preview.messages)
    assert preview.step == 7
    history = text.split("Previous moves and their outcome:\n", 1)[1].split("\nPrevious image", 1)
    lines = history[0].splitlines()
    assert len(lines) == 7
    assert (
        lines[0] == "1. Option 6, move backward (towards the camera): executed without collision."
    )
    assert "executed without collision" in lines[4]
    assert "failed because of a collision" in lines[5]
    assert lines[6] == "7. Option 3, move left: executed without collision."
    assert text.endswith(
        f"9. You have a limited number of {SCENE.max_steps} steps in total.\n10. {BENIGN_NOTE}"
    )
    assert CHOICE_LINE in text


def test_both_images_are_named_by_the_hand_cell_and_frame_key():
    preview = prompt_after(SCENE, 0, [6, 3], 256)
    images = [p for p in preview.messages[1].parts if isinstance(p, ImagePart)]
    assert [i.label.split(",")[0] for i in images] == ["previous view", "current view"]
    assert preview.previous_cell == (-1, 0, 0) and preview.cell == (-1, 1, 0)
    version = renderer_version()
    assert frame_key(version, SCENE.id, (-1, 0, 0), 256) in images[0].label
    assert frame_key(version, SCENE.id, (-1, 1, 0), 256) in images[1].label
    assert "hand at cell (-1, 1, 0)" in images[1].label


def test_no_moves_is_the_first_step():
    preview = prompt_after(SCENE, 3, [], 256)
    text = messages_as_text(preview.messages)
    assert "Previous moves: none yet" in text and "previous view" not in text


def test_moves_past_the_end_of_the_episode_are_refused():
    budget = SCENE.max_steps
    with pytest.raises(EpisodeOver, match=f"ends with move {budget}"):
        prompt_after(SCENE, 2, [1] * budget, 256)
    with pytest.raises(EpisodeOver, match=f"ends after move {budget}"):
        prompt_after(SCENE, 2, [1] * (budget + 1), 256)


@pytest.mark.parametrize("text", ["7", "6,,3", "up", "0", "6;3"])
def test_bad_moves_name_the_field_and_the_expected_options(text):
    with pytest.raises(ValueError, match="--moves: each move must be an option 1-6"):
        parse_moves(text)


def test_moves_parse_with_spaces_and_empty_means_none():
    assert parse_moves(" 6, 6,3 ") == [6, 6, 3]
    assert parse_moves("") == []
