import pytest

from evaluation.parsing import parse_choice


@pytest.mark.parametrize(
    ("text", "option"),
    [
        ("I will move down.\nChoice: [2]", 2),
        ("choice: 5", 5),
        ("CHOICE:[ 3 ]", 3),
        ("**Choice:** [6]", 6),
        ("**Choice: 4**", 4),
        ("Choice - (1)", 1),
        ("Choice\uff1a[3]", 3),
        ("Step 1: two hands. Choice: [4]\nMaybe 6 later", 4),
    ],
)
def test_it_reads_the_choice_line_in_its_common_spellings(text, option):
    assert parse_choice(text).option == option


def test_the_first_choice_line_counts_as_in_the_reference():
    assert parse_choice("Choice: [3] ... on second thought Choice: [5]").option == 3


def test_without_a_choice_line_the_last_integer_counts():
    assert parse_choice("Options 1 and 2 look bad, so I pick 6").option == 6


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty response"),
        ("   ", "empty response"),
        ("I cannot decide.", "no 'Choice: [n]' line"),
        ("Choice: [7]", "Choice 7 is not an option"),
        ("Choice: [0]", "Choice 0 is not an option"),
        ("I would go 12 steps", "last number 12 is not an option"),
    ],
)
def test_anything_else_is_a_bad_response_with_a_reason(text, reason):
    result = parse_choice(text)
    assert result.option is None
    assert reason in result.error
