"""Reading the chosen option out of a model's answer.

The rule is the reference implementation's, reproduced exactly so that bad-response counts and
scores stay comparable with the paper (``protocol.md``, "Answer parsing"):

1. Strip the answer. If nothing is left, it is a bad response.
2. Search, ignoring case, for ``Choice``, an optional ``:``, any amount of whitespace (newlines
   included), an optional ``[`` and then a run of digits. The first place where this whole
   pattern matches gives the number; later ``Choice`` lines are ignored.
3. If the pattern matches nowhere, the last run of digits anywhere in the answer gives it.
4. The number must be an option, 1 to 6; anything else, or no digits at all, is a bad response.

Consequences that look surprising but are the reference's behaviour:

- A minus or plus sign is not part of a number: ``Choice: -3`` reads 3 (through step 3).
- Between ``Choice`` and the digits only a colon, whitespace and a ``[`` may stand, in that
  order. ``**Choice:** [3]``, ``Choice: (3)``, ``Choice - 3``, ``Choice: [ 3 ]``, a
  full-width colon (U+FF1A) and ``choices: 3`` all fall through to the last number.
- ``Choice`` also matches inside words: ``multiple-choice 4`` counts as a choice of 4.
- A digit is any Unicode decimal digit (category Nd), as Python's ``\\d`` and ``int()`` see it:
  a full-width 3 (U+FF13) and an Arabic-Indic 3 (U+0663) both read 3. Leading zeros are
  dropped (``06`` is 6; ``007`` is 7, so a bad response). Superscripts such as ``²`` are not
  digits.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

N_OPTIONS = 6

_CHOICE = re.compile(r"choice:?\s*\[?(\d+)", re.IGNORECASE)
_DIGITS = re.compile(r"\d+")
_MAX_DIGITS = 20
"""Numbers with more significant digits are not converted: they cannot be options anyway."""


@dataclass(frozen=True)
class ParseResult:
    """The option a response chose, or why none could be read."""

    option: int | None
    error: str | None = None


def _value(digits: str) -> int | None:
    """Return the value of a run of decimal digits, or None when it is far too large an option.

    Equal to ``int(digits)`` wherever that is not None; it sidesteps ``int()``'s limit on the
    length of the strings it converts.
    """
    start = 0
    while start < len(digits) - 1 and unicodedata.decimal(digits[start]) == 0:
        start += 1
    significant = digits[start:]
    return int(significant) if len(significant) <= _MAX_DIGITS else None


def _shown(digits: str, value: int | None) -> str:
    """Return the number as an error message shows it: as written, and its value if different."""
    if value is None:
        return f"a {len(digits)}-digit number"
    if str(value) == digits:
        return digits
    return f"{digits!r} (read as {value})"


def _option(digits: str, found: str) -> ParseResult:
    """Return the option ``digits`` names, or a bad response saying where the number was found."""
    value = _value(digits)
    if value is not None and 1 <= value <= N_OPTIONS:
        return ParseResult(value)
    return ParseResult(
        None, f"{found} {_shown(digits, value)}, which is not an option (1-{N_OPTIONS})"
    )


def parse_choice(text: str) -> ParseResult:
    """Return the option (1-6) chosen in ``text`` by the reference rule (see the module doc).

    A bad response gives ``ParseResult(None, error)``, the error saying why: the answer is
    empty, holds no number at all, or the number it gives is not an option.
    """
    stripped = text.strip() if text else ""
    if not stripped:
        return ParseResult(None, "empty response")
    match = _CHOICE.search(stripped)
    if match:
        return _option(match.group(1), "'Choice' is followed by")
    runs = _DIGITS.findall(stripped)
    if not runs:
        return ParseResult(None, "no 'Choice: [n]' line and no number anywhere in the response")
    return _option(runs[-1], "no 'Choice: [n]' line, and the last number in the response is")
