import re

import pytest

from evaluation.messages import ImagePart, TextPart
from evaluation.prompts import (
    SYSTEM_TEXT,
    HistoryEntry,
    build_messages,
    messages_as_text,
    task_text,
)
from simulation.catalogue import scene_set

IMAGE = ImagePart(b"png", 1024, 1024, "view")
SCENES = list(scene_set().values())


def user_text(scene, level, history=()):
    messages = build_messages(scene, level, list(history), [IMAGE], IMAGE)
    return messages_as_text(messages)


@pytest.mark.parametrize("level", [2, 3])
def test_levels_2_and_3_never_mention_a_mirror_or_reflections(level):
    for scene in SCENES:
        text = user_text(scene, level).lower()
        assert not re.search(r"mirror|reflect", text), scene.id


def test_level_3_never_mentions_the_body():
    for scene in SCENES:
        text = user_text(scene, 3).lower()
        assert scene.body.description.lower() not in text
        assert not re.search(r"\byour body\b|\bbody\b", text), scene.id


def test_levels_0_to_2_describe_the_body_and_the_mark():
    scene = SCENES[0]
    for level in (0, 1, 2):
        text = user_text(scene, level)
        assert scene.body.description in text and scene.mark.description in text


def test_levels_0_and_1_disclose_the_mirror_and_the_mark_on_the_front():
    scene = SCENES[-1]
    for level in (0, 1):
        text = user_text(scene, level)
        assert "mirror" in text and "front of your body" in text and "camera" in text


def test_only_level_0_carries_the_reasoning_template():
    scene = SCENES[0]
    assert "Depth check:" in task_text(scene, 0)
    for level in (1, 2, 3):
        assert "Depth check" not in task_text(scene, level)
        assert "Choice: [n]" in task_text(scene, level)


def test_level_1_hints_that_the_reflection_is_not_another_body():
    assert "not another body" in task_text(SCENES[0], 1)
    assert "not another body" not in task_text(SCENES[0], 0)


def test_every_level_has_the_system_message_track_hand_options_budget_and_format():
    for scene in (SCENES[0], SCENES[-1]):
        for level in range(4):
            messages = build_messages(scene, level, [], [], IMAGE)
            assert messages[0].role == "system" and messages[0].parts[0].text == SYSTEM_TEXT
            text = messages_as_text(messages)
            assert f"simulated {'human' if scene.track == 'Human' else 'robotic'} agent" in text
            assert scene.hand.description in text
            for n in range(1, 7):
                assert f"{n}. Move" in text
            assert f"Step 1 of {scene.max_steps}" in text
            assert "Choice: [n]" in text


def test_the_history_reports_every_action_with_its_feedback():
    history = [HistoryEntry(6, True), HistoryEntry(6, False), HistoryEntry(None, False)]
    text = user_text(SCENES[0], 1, history)
    assert (
        "Step 1: option 6 (move backward (towards the camera)): executed without collision" in text
    )
    assert "Step 2: option 6" in text and "failed because of a collision" in text
    assert "Step 3: no valid option" in text
    assert f"you have {SCENES[0].max_steps - 3} moves left" in text


def test_previous_images_come_before_the_current_one():
    older = ImagePart(b"a", 64, 64, "older")
    newer = ImagePart(b"b", 64, 64, "newer")
    current = ImagePart(b"c", 64, 64, "current")
    user = build_messages(SCENES[0], 0, [], [older, newer], current)[1]
    images = [p for p in user.parts if isinstance(p, ImagePart)]
    assert images == [older, newer, current]
    labels = [p.text for p in user.parts if isinstance(p, TextPart)][-3:]
    assert labels == ["The view 2 steps ago:", "The view 1 step ago:", "The current view:"]


def test_an_unknown_level_is_refused():
    with pytest.raises(ValueError, match="level"):
        task_text(SCENES[0], 4)
