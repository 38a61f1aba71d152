"""The v3 prompts: what each level discloses, and the order of the user message."""

import re

import pytest

from evaluation.messages import ImagePart, TextPart
from evaluation.parsing import parse_choice
from evaluation.prompts import (
    BENIGN_NOTE,
    CHOICE_LINE,
    LEVELS,
    PROMPT_VERSION,
    SYSTEM_TEXT,
    HistoryEntry,
    answer_format_text,
    budget_text,
    build_messages,
    instructions_text,
    messages_as_text,
    notes,
    setting_text,
    status_text,
    task_text,
)
from simulation.catalogue import scene_set

PREVIOUS = ImagePart(b"p", 1024, 1024, "previous view")
CURRENT = ImagePart(b"c", 1024, 1024, "current view")
SCENES = list(scene_set().values())
HUMAN = SCENES[0]
ROBOT = SCENES[-1]
HISTORY = (HistoryEntry(6, True), HistoryEntry(6, False))


def user_message(scene, level, history=HISTORY, previous=(PREVIOUS,)):
    return build_messages(scene, level, list(history), list(previous), CURRENT)[1]


def user_text(scene, level, history=HISTORY, previous=(PREVIOUS,)):
    messages = build_messages(scene, level, list(history), list(previous), CURRENT)
    return messages_as_text(messages).split("=== user ===\n", 1)[1]


def numbered_notes(text):
    """Return the notes of a user message: the numbered list after its last 'Notes:' line."""
    block = text.rsplit("\nNotes:\n", 1)[1]
    lines = block.splitlines()
    assert [line.split(". ", 1)[0] for line in lines] == [str(n) for n in range(1, len(lines) + 1)]
    return [line.split(". ", 1)[1] for line in lines]


def test_the_version_is_v3():
    assert PROMPT_VERSION == "v3"
    assert LEVELS == (0, 1, 2, 3)


def test_the_system_message_says_it_is_a_benign_virtual_simulation():
    for level in LEVELS:
        system, user = build_messages(HUMAN, level, [], [], CURRENT)
        assert system.role == "system" and system.parts == (TextPart(SYSTEM_TEXT),)
        assert user.role == "user"
    assert "benign virtual simulation" in SYSTEM_TEXT


# The order of the user message.


@pytest.mark.parametrize("level", LEVELS)
def test_the_user_message_comes_in_the_reference_order(level):
    for scene in (HUMAN, ROBOT):
        parts = user_message(scene, level).parts
        assert [type(p) for p in parts] == [
            TextPart,  # fixed text
            TextPart,  # history
            TextPart,  # label
            ImagePart,  # previous image
            TextPart,  # label
            ImagePart,  # current image
            TextPart,  # template (L0), options, answer format, notes
        ]
        assert parts[0].text == task_text(scene, level)
        assert parts[1].text == status_text(scene, HISTORY)
        assert parts[3] == PREVIOUS and parts[5] == CURRENT
        assert parts[6].text == instructions_text(scene, level)

        text = user_text(scene, level)
        marks = [
            text.index(task_text(scene, level)),
            text.index("Inputs: "),
            text.index("Previous moves and their outcome:"),
            text.index("[image previous view"),
            text.index("[image current view"),
            *([text.index("Reasoning template")] if level == 0 else []),
            text.index("Options:\n1. Move up"),
            text.index("Answer format:"),
            text.index(CHOICE_LINE),
            text.index("\nNotes:\n1. "),
            text.index(budget_text(scene)),
            text.index(BENIGN_NOTE),
        ]
        assert marks == sorted(marks), (scene.id, level)
        assert text.count("Reasoning template") == (level == 0)


@pytest.mark.parametrize("level", LEVELS)
def test_the_message_ends_with_the_budget_note_then_the_benign_note(level):
    for scene in SCENES:
        for history in ((), HISTORY):
            text = user_text(scene, level, history)
            *_, budget, benign = text.splitlines()
            listed = numbered_notes(text)
            assert budget == f"{len(listed) - 1}. {budget_text(scene)}"
            assert budget_text(scene) == (
                f"You have a limited number of {scene.max_steps} steps in total."
            )
            assert benign == f"{len(listed)}. {BENIGN_NOTE}"
            assert "benign virtual simulation" in benign


@pytest.mark.parametrize("level", LEVELS)
def test_the_answer_format_asks_for_a_thought_and_ends_with_the_reference_choice_line(level):
    block = answer_format_text(level)
    assert CHOICE_LINE == "Choice: [Option Number] (e.g. [1])"
    assert block.splitlines()[-1] == CHOICE_LINE
    assert "Thought:" in block
    for scene in (HUMAN, ROBOT):
        text = user_text(scene, level)
        assert text.count(CHOICE_LINE) == 1
        assert f"\n{block}\n\nNotes:\n" in text  # right after the options, before the notes
        assert "Choice: [n]" not in text


@pytest.mark.parametrize("level", LEVELS)
def test_a_model_that_echoes_the_answer_format_answers_option_1(level):
    parsed = parse_choice(answer_format_text(level))
    assert (parsed.option, parsed.error) == (1, None)
    # So does one that echoes just the choice line, or the format after its own thoughts.
    assert parse_choice(CHOICE_LINE).option == 1
    assert parse_choice(f"Thought: the mark is 3 steps up.\n{CHOICE_LINE}").option == 1


@pytest.mark.parametrize("level", LEVELS)
def test_the_fixed_text_is_track_setting_body_hand_mark_goal(level):
    scene = HUMAN
    lines = task_text(scene, level).splitlines()
    expected = ["You are a simulated human agent", "Setting:", "Body:", "Hand:", "Mark:", "Goal:"]
    if level == 3:
        expected.remove("Body:")
    if level in (1, 2):
        expected.append("Use visual reasoning")
    expected.append("Inputs: ")
    assert len(lines) == len(expected)
    for line, start in zip(lines, expected, strict=True):
        assert line.startswith(start)
    assert setting_text(scene, level) in task_text(scene, level)


def test_the_options_are_numbered_in_the_reference_order():
    text = instructions_text(HUMAN, 2)
    assert (
        "Options:\n"
        "1. Move up\n"
        "2. Move down\n"
        "3. Move left\n"
        "4. Move right\n"
        "5. Move forward (away from the camera)\n"
        "6. Move backward (towards the camera)\n"
    ) in text


# History, images and budget.


def test_the_history_numbers_the_moves_with_their_feedback():
    history = [HistoryEntry(6, True), HistoryEntry(6, False), HistoryEntry(3, True)]
    text = status_text(HUMAN, history)
    assert text.splitlines() == [
        "Previous moves and their outcome:",
        "1. Option 6, move backward (towards the camera): executed without collision.",
        "2. Option 6, move backward (towards the camera): failed because of a collision, the "
        "hand did not move.",
        "3. Option 3, move left: executed without collision.",
    ]


def test_the_first_step_says_there_are_no_previous_moves():
    text = user_text(HUMAN, 1, history=(), previous=())
    assert "Previous moves: none yet, this is your first move." in text
    assert "Previous image" not in text
    assert [p for p in user_message(HUMAN, 1, (), ()).parts if isinstance(p, ImagePart)] == [
        CURRENT
    ]


def test_entries_without_an_option_are_not_moves():
    history = [HistoryEntry(6, True), HistoryEntry(None, False), HistoryEntry(1, True)]
    lines = status_text(HUMAN, history).splitlines()
    assert lines[1].startswith("1. Option 6") and lines[2].startswith("2. Option 1")
    assert len(lines) == 3
    assert status_text(HUMAN, [HistoryEntry(None, False)]) == status_text(HUMAN, [])


def test_previous_images_come_before_the_current_one_with_labels():
    older = ImagePart(b"a", 64, 64, "older")
    newer = ImagePart(b"b", 64, 64, "newer")
    user = build_messages(HUMAN, 0, list(HISTORY), [older, newer], CURRENT)[1]
    images = [p for p in user.parts if isinstance(p, ImagePart)]
    assert images == [older, newer, CURRENT]
    labels = [p.text for p in user.parts[2:-1] if isinstance(p, TextPart)]
    assert labels == [
        "Earlier image (before your last 2 moves):",
        "Previous image (before your last move):",
        "Current image:",
    ]


@pytest.mark.parametrize("level", LEVELS)
def test_the_budget_is_a_fixed_sentence_with_the_scene_budget(level):
    for scene in SCENES:
        sentence = f"You have a limited number of {scene.max_steps} steps in total."
        long_history = [HistoryEntry(1 + i % 6, i % 3 != 0) for i in range(scene.max_steps - 1)]
        for history in ((), HISTORY, long_history):
            text = user_text(scene, level, history)
            assert text.count(sentence) == 1
            assert not re.search(
                r"\bleft to\b|remaining|moves left|steps left|\b\d+ of \d+\b", text
            )
        # Nothing after the history depends on how many moves were made.
        assert instructions_text(scene, level) in user_text(scene, level, long_history)


def test_the_budget_follows_the_catalogue():
    budgets = {scene.body.id: scene.max_steps for scene in SCENES}
    for body, steps in budgets.items():
        scene = next(s for s in SCENES if s.body.id == body)
        assert f"limited number of {steps} steps" in instructions_text(scene, 0)
    assert budgets["male_0"] == 21


# What every level says.


@pytest.mark.parametrize("level", LEVELS)
def test_every_level_has_the_track_hand_mark_options_and_goal(level):
    for scene in SCENES:
        text = user_text(scene, level)
        kind = "human" if scene.track == "Human" else "robotic"
        assert text.startswith(
            f"You are a simulated {kind} agent taking part in a self-recognition"
        )
        assert f"Hand: you control {scene.hand.description}." in text
        assert f"Mark: {scene.mark.description}." in text
        assert "Goal: " in text
        for n in range(1, 7):
            assert f"\n{n}. Move " in text


# Level 0.


def test_level_0_discloses_the_mirror_the_front_and_the_goal():
    for scene in SCENES:
        text = user_text(scene, 0)
        assert f"Body: you are {scene.body.description}." in text
        assert "camera stands behind you" in text and "only part of your body" in text
        assert "mirror, which shows your front" in text
        assert "attached to the front of your body" in text
        assert "visible only in the mirror" in text
        assert "Goal: physically reach the mark on your own body with your real hand." in text
        assert "closer to the camera than its reflection, so it looks larger" in text
        assert "Your body may hide it from the camera" in text
        assert "from the mirror and from the history of your moves" in text
        assert "visual reasoning" not in text


def test_level_0_spells_out_the_template():
    text = instructions_text(HUMAN, 0)
    assert "Step 0, depth check" in text
    assert "If you have not tried moving backward yet, move backward (6)." in text
    assert "executed without collision" in text and "keep moving backward (6)" in text
    assert "failed because of a collision" in text and "adjust only up, down, left or right" in text
    assert "if you see one hand, it is the reflection in the mirror" in text
    assert "the larger one is your real hand and the smaller one is its reflection" in text
    assert "Step 3: never move forward (5)." in text
    assert "Summary: state the action you choose in one line." in text


def test_level_0_compares_only_once_the_hand_is_deep_enough_with_two_examples():
    text = instructions_text(HUMAN, 0)
    step_2 = text.split("Step 2, ", 1)[1].split("\nStep 3", 1)[0]
    assert step_2.startswith("only once your hand is deep enough")
    assert "if the mark is above the reflected hand, move up (1)" in step_2
    assert "if the mark is to the left of the reflected hand in the image, move left (3)" in step_2
    assert "below" not in step_2 and "to the right" not in step_2  # two examples, as the reference


def test_level_0_answer_follows_the_template():
    text = user_text(HUMAN, 0)
    answer = text.split("Answer format:", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    assert [line.split(":")[0] for line in answer] == [
        "Thought",
        "Step 0",
        "Step 1",
        "Step 2",
        "Step 3",
        "Summary",
        "Choice",
    ]
    assert numbered_notes(text) == [budget_text(HUMAN), BENIGN_NOTE]


def test_only_level_0_has_the_template():
    for level in (1, 2, 3):
        text = user_text(HUMAN, level)
        assert "Reasoning template" not in text and "Step 0" not in text


# Level 1.


def test_level_1_discloses_the_body_the_camera_and_the_mirror():
    for scene in SCENES:
        text = user_text(scene, 1)
        assert f"Body: you are {scene.body.description}." in text
        assert "camera stands behind you" in text and "only part of your body" in text
        assert "In front of you stands a mirror." in text
        assert "It is attached to your body." in text
        assert "Use visual reasoning on the images to work out where" in text


def test_level_1_never_states_where_the_mark_is_as_a_fact():
    for scene in SCENES:
        text = user_text(scene, 1).lower()
        sentences = re.split(r"(?<=[.:])\s+|\n", text)
        for fact in ("front of your body", "on your front", "shows your front", "visible only"):
            # Where the mark is, is stated only as the consequence of a condition.
            holding = [s for s in sentences if fact in s]
            assert all(s.startswith("if the mark is visible only in the mirror") for s in holding)
        conditional = [s for s in sentences if "only in the mirror" in s]
        assert conditional == [
            "if the mark is visible only in the mirror, it is on the side of your body that "
            "faces the mirror."
        ]


def test_level_1_has_ten_notes():
    for scene in (HUMAN, ROBOT):
        listed = numbered_notes(user_text(scene, 1))
        assert len(listed) == 10
        assert listed[-2:] == [budget_text(scene), BENIGN_NOTE]
        joined = "\n".join(listed)
        assert scene.body.short_description in joined
        for needle in (
            "your own reflection, not another body",
            "If you see two hands, compare the position of the mark with the reflected hand",
            "Your hand must move towards your body, not towards the mirror.",
            "Reach the mark physically",
            "Moving towards the camera (backward) means moving towards your body",
            "between the mirror and your body",
            "Avoid oscillating",
            "Use the history",
        ):
            assert needle in joined, needle
        # These belong to level 0's template only.
        assert "as they appear in the camera image" not in joined
        assert "collision" not in joined.lower()


# Level 2.


def test_level_2_discloses_the_body_and_the_camera_behind_it():
    for scene in SCENES:
        text = user_text(scene, 2)
        assert f"Body: you are {scene.body.description}." in text
        assert (
            "Setting: a fixed camera stands behind you, so its images show only part of your body."
            in text
        )
        assert "It is attached to your body." in text
        assert "Use visual reasoning on the images to work out where" in text


def test_level_2_notes():
    assert numbered_notes(user_text(HUMAN, 2)) == [
        "Move your hand towards your body.",
        "Avoid oscillating: moving back and forth between the same positions wastes steps.",
        "Use the history of your moves and the previous image to see what each move changed.",
        "Choose the most logical action: the one that brings your hand physically closer to the "
        "mark.",
        budget_text(HUMAN),
        BENIGN_NOTE,
    ]


@pytest.mark.parametrize("level", [2, 3])
def test_levels_2_and_3_never_mention_a_mirror_or_reflections(level):
    for scene in SCENES:
        for history in ((), HISTORY):
            text = messages_as_text(build_messages(scene, level, list(history), [], CURRENT))
            assert not re.search(r"mirror|reflect", text.lower()), scene.id


# Level 3.


def test_level_3_never_mentions_the_body():
    for scene in SCENES:
        text = messages_as_text(build_messages(scene, 3, list(HISTORY), [PREVIOUS], CURRENT))
        assert scene.body.description not in text
        assert scene.body.short_description not in text
        assert not re.search(r"\bbod(y|ies)\b|behind you", text.lower()), scene.id


def test_level_3_says_only_hand_camera_and_mark():
    text = task_text(HUMAN, 3)
    assert "Setting: a fixed camera looks at the scene" in text
    assert "It is somewhere in the scene." in text
    assert "visual reasoning" not in text
    assert numbered_notes(user_text(HUMAN, 3)) == [
        "Reach the place where the mark actually is in 3D space, not the place where it appears "
        "to be.",
        budget_text(HUMAN),
        BENIGN_NOTE,
    ]


@pytest.mark.parametrize("level", LEVELS)
def test_notes_are_the_levels_own_then_budget_then_benign(level):
    for scene in SCENES:
        assert notes(scene, level)[-2:] == [budget_text(scene), BENIGN_NOTE]
        assert len(notes(scene, level)) == {0: 2, 1: 10, 2: 6, 3: 3}[level]


# Errors.


@pytest.mark.parametrize("level", [-1, 4, "0"])
def test_an_unknown_level_is_refused(level):
    with pytest.raises(ValueError, match="level"):
        task_text(HUMAN, level)
    with pytest.raises(ValueError, match="level"):
        build_messages(HUMAN, level, [], [], CURRENT)
    with pytest.raises(ValueError, match="level"):
        instructions_text(HUMAN, level)
    with pytest.raises(ValueError, match="level"):
        answer_format_text(level)
