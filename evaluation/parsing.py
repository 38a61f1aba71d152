"""Reading the chosen option out of a model's answer."""

from __future__ import annotations

import re
from dataclasses import dataclass

N_OPTIONS = 6

# "Choice: [3]", "choice: 3", "**Choice:** [3]", "Choice - (3)", "CHOICE:[ 3 ]".
_CHOICE = re.compile(
    r"choice\s*\**\s*[:\uff1a\-]\s*\**\s*[\[\(\{]?\s*(-?\d+)\s*[\]\)\}]?", re.IGNORECASE
)
_INTEGER = re.compile(r"-?\d+")


@dataclass(frozen=True)
class ParseResult:
    """The option a response chose, or why none could be read."""

    option: int | None
    error: str | None = None


def parse_choice(text: str) -> ParseResult:
    """Return the option (1-6) chosen in ``text``.

    The number after the first ``Choice:`` counts (brackets, case and markdown emphasis are
    optional), as in the reference implementation, so scores stay comparable with the paper;
    failing that, the last integer in the text. A number outside 1-6, or none at all, is a bad
    response.
    """
    if not text or not text.strip():
        return ParseResult(None, "empty response")
    choices = _CHOICE.findall(text)
    if choices:
        value, source = int(choices[0]), "Choice"
    else:
        integers = _INTEGER.findall(text)
        if not integers:
            return ParseResult(None, "no 'Choice: [n]' line and no number in the response")
        value, source = int(integers[-1]), "last number"
    if not 1 <= value <= N_OPTIONS:
        return ParseResult(None, f"{source} {value} is not an option (1-{N_OPTIONS})")
    return ParseResult(value)
