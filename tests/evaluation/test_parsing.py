"""The reference parsing rule: first ``choice:?\\s*\\[?(\\d+)`` match, else the last number.

Every expected value below was worked out by hand from the rule in ``protocol.md``, not by
running the parser.
"""

import pytest

from evaluation.parsing import N_OPTIONS, ParseResult, parse_choice

FULLWIDTH_COLON = "\uff1a"


def fullwidth(n: int) -> str:
    return chr(0xFF10 + n)


def arabic_indic(n: int) -> str:
    return chr(0x0660 + n)


def persian(n: int) -> str:
    return chr(0x06F0 + n)


def devanagari(n: int) -> str:
    return chr(0x0966 + n)


# (id, answer, expected option or None for a bad response)
CASES = [
    # The plain format and its brackets.
    ("plain", "Choice: [3]", 3),
    ("no-brackets", "Choice: 5", 5),
    ("no-space", "Choice:[4]", 4),
    ("reasoning-then-choice", "The mark is above the reflected hand.\nChoice: [1]", 1),
    ("trailing-period", "Choice: [2].", 2),
    ("closing-bracket-irrelevant", "Choice: [6", 6),
    ("space-inside-bracket", "Choice: [ 3 ] though 5 is tempting", 5),
    ("double-bracket", "Choice: [[2]] or 4", 4),
    ("round-brackets", "Choice: (3) of 6", 6),
    ("decimal", "Choice: [2.5]", 2),
    # Case.
    ("lower-case", "choice: 5", 5),
    ("upper-case", "CHOICE:[4]", 4),
    ("mixed-case", "ChOiCe: [2]", 2),
    # Whitespace and newlines between Choice and the number.
    ("newline", "Choice:\n[6]", 6),
    ("blank-lines", "Choice:\n\n   4", 4),
    ("crlf", "CHOICE:\r\n5", 5),
    ("tab", "Choice:\t[1]", 1),
    ("no-break-space", "Choice:\u00a0[2]", 2),
    ("heading-then-number", "# Choice\n\n3", 3),
    ("choice-at-line-end", "The answer is 1.\nMy final choice\n[6]", 6),
    # The colon missing or doubled.
    ("no-colon", "Choice 3", 3),
    ("no-colon-no-space", "Choice3", 3),
    ("no-colon-bracket", "Choice[2]", 2),
    ("no-colon-then-later-number", "Choice 3 (move left); step 2", 3),
    ("double-colon", "Choice:: 4, then 2", 2),
    ("dash-instead-of-colon", "Choice - 4, not 2", 2),
    # Signs are not part of a number.
    ("minus", "Choice: -3", 3),
    ("minus-in-brackets", "Choice: [-2]", 2),
    ("plus", "Choice:[+5]", 5),
    # Unicode digits and colons.
    ("fullwidth-digit", f"Choice: {fullwidth(3)}", 3),
    ("fullwidth-digit-in-brackets", f"Choice: [{fullwidth(5)}]", 5),
    ("fullwidth-colon-falls-through", f"Choice{FULLWIDTH_COLON}[3] rather than 5", 5),
    ("fullwidth-colon-and-digit", f"Choice{FULLWIDTH_COLON}{fullwidth(4)}", 4),
    ("ideographic-space", f"Choice:\u3000{fullwidth(2)}", 2),
    ("arabic-indic", f"Choice: [{arabic_indic(4)}]", 4),
    ("arabic-indic-seven", f"Choice: {arabic_indic(7)}", None),
    ("persian", f"Choice: {persian(1)}", 1),
    ("devanagari", f"Choice: {devanagari(5)}", 5),
    ("mixed-scripts-one-run", f"Choice: 3{fullwidth(4)}", None),
    ("superscript-is-no-digit", "Choice: [\u00b2]", None),
    ("superscript-after-a-number", "Option 4 looks best, squared: 4\u00b2", 4),
    # Numbers that are not options.
    ("zero", "Choice: [0]", None),
    ("seven", "Choice: [7]", None),
    ("twelve", "Choice 12", None),
    ("ten", "Choice: 10", None),
    ("leading-zeros-seven", "Choice: [007]", None),
    ("leading-zero-six", "Choice: [06]", 6),
    ("fullwidth-leading-zero", f"Choice: {fullwidth(0)}{fullwidth(1)}", 1),
    ("hex-looking", "Choice: [0x5]", None),
    ("exponent-looking", "Choice: 1e3", 1),
    ("huge-number", "Choice: " + "9" * 5000, None),
    ("huge-run-of-zeros-then-two", "Choice: " + "0" * 5000 + "2", 2),
    # Several Choice lines: the first match counts, valid or not.
    ("first-of-two", "Choice: [1]\nChoice: [2]", 1),
    ("second-thoughts", "Choice: [3] ... on second thought Choice: [5]", 3),
    ("first-is-invalid", "Choice: [9]\nChoice: [2]", None),
    ("choice-in-prose-first", "My choice 3 is bad. Choice: [5]", 3),
    ("placeholder-skipped", "I answer in the format Choice: [n].\nChoice: [2]", 2),
    ("placeholder-only", "Choice: [Option Number] (e.g. [1])", 1),
    ("inside-a-word", "This is a multiple-choice 4 option question. Choice: [2]", 4),
    ("choose-is-not-choice", "I choose [3]", 3),
    ("choices-plural", "choices: 2 or 5", 5),
    ("choices-plural-single", "choices: 2", 2),
    # Reasoning text with numbers and no Choice line: the last number.
    ("last-number", "Options 1 and 2 look bad, so I pick 6", 6),
    ("option-word", "I pick option 4.", 4),
    ("last-number-out-of-range", "Option 1 moves up. That leaves 20 steps.", None),
    ("numbers-before-choice-ignored", "Final answer: 5. Choice: [2]", 2),
    ("numbers-after-choice-ignored", "Choice: [4], then 1 step closer", 4),
    ("empty-brackets", "There are 6 options. Choice: [ ]", 6),
    # Markdown.
    ("bold-label", "**Choice:** [3] ... 1 step closer", 1),
    ("bold-label-only-number", "**Choice:** [6]", 6),
    ("bold-whole-line", "**Choice: 4**", 4),
    ("bold-word", "**Choice**: [2]", 2),
    ("code-block", "```\nChoice: [5]\n```", 5),
    ("list-item", "- Step 0: executed\n- Step 1: two hands\n- Choice: [4]", 4),
    ("surrounding-whitespace", "\n\n   Choice: [5]   \n", 5),
    # No number at all.
    ("empty", "", None),
    ("whitespace-only", "   \n\t ", None),
    ("no-number", "I cannot decide.", None),
    ("choice-without-number", "Choice: [n]", None),
]


@pytest.mark.parametrize(("text", "option"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_the_reference_rule(text, option):
    result = parse_choice(text)
    assert result.option == option
    assert (result.error is None) == (option is not None)


def test_the_table_covers_enough_answers():
    assert len(CASES) >= 40
    assert len({c[0] for c in CASES}) == len(CASES)


def test_there_are_six_options():
    assert N_OPTIONS == 6


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Choice 3 (move left); step 2", 3),
        ("My choice 3 is bad. Choice: [5]", 3),
        ("**Choice:** [3] ... 1 step closer", 1),
        ("Choice: [Option Number] (e.g. [1])", 1),
        ("Choice: (3) of 6", 6),
        ("Choice: -3", 3),
    ],
    ids=["later-number", "first-match", "bold-falls-through", "placeholder", "paren", "minus"],
)
def test_the_consequences_named_in_the_protocol(text, expected):
    assert parse_choice(text) == ParseResult(expected)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty response"),
        ("   \n ", "empty response"),
        ("I cannot decide.", "no 'Choice: [n]' line and no number anywhere"),
        ("Choice: [7]", "'Choice' is followed by 7, which is not an option (1-6)"),
        ("Choice: [0]", "'Choice' is followed by 0, which is not an option"),
        ("Choice: [007]", "'Choice' is followed by '007' (read as 7), which is not an option"),
        (f"Choice: {arabic_indic(8)}", "(read as 8), which is not an option"),
        ("Choice: " + "9" * 5000, "'Choice' is followed by a 5000-digit number"),
        (
            "I would go 12 steps",
            "no 'Choice: [n]' line, and the last number in the response is 12, which is not an "
            "option (1-6)",
        ),
    ],
    ids=["empty", "blank", "no-number", "seven", "zero", "leading-zeros", "arabic", "huge", "12"],
)
def test_a_bad_response_says_why(text, reason):
    result = parse_choice(text)
    assert result.option is None and result.error is not None
    assert reason in result.error


def test_a_missing_choice_line_is_reported_first():
    # The runner's logs and the agents' tests rely on this prefix.
    error = parse_choice("not sure").error
    assert error is not None and error.startswith("no 'Choice")
