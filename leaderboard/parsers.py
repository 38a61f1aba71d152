"""The API's JSON parser: DRF's, refusing nesting deeper than ``MAX_JSON_DEPTH`` before parsing.

Python's json module recurses once per level: a body of 100,000 ``[`` raised RecursionError, a
500. The depth is measured first without recursion (one pass over the text, counting brackets
outside strings), and a body nested too deep is answered 400 naming the limit.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import IO, Any

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser
from rest_framework.utils import json

MAX_JSON_DEPTH = 64

# A whole string (skipped: brackets inside it do not count), or a bracket.
_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)


def json_depth_exceeds(text: str, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether ``text`` nests arrays and objects more than ``limit`` deep (stops once it does).

    Brackets in strings are skipped, escaped quotes included; invalid JSON is left to the
    parser to refuse.
    """
    depth = 0
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > limit:
                return True
        elif token in "]}":
            depth -= 1
    return False


class DepthLimitedJSONParser(JSONParser):
    """DRF's JSON parser, refusing (400) a body nested more than ``MAX_JSON_DEPTH`` deep."""

    def parse(
        self,
        stream: IO[Any],
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        encoding = (parser_context or {}).get("encoding") or settings.DEFAULT_CHARSET
        try:
            text = stream.read().decode(encoding)
        except (LookupError, UnicodeError) as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
        if json_depth_exceeds(text):
            raise ParseError(
                f"JSON parse error - nested more than {MAX_JSON_DEPTH} levels deep "
                "(arrays and objects); nothing here takes more than a few"
            )
        parse_constant = json.strict_constant if self.strict else None
        try:
            return json.loads(text, parse_constant=parse_constant)
        except RecursionError:  # only if MAX_JSON_DEPTH were raised past Python's own limit
            raise ParseError("JSON parse error - nested too deep") from None
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
