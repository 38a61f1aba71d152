"""CSV downloads: one writer for every table the site offers as CSV.

Cells that a spreadsheet would run as a formula (text beginning with ``=``, ``+``, ``-``,
``@``, a tab or a carriage return) get a leading apostrophe, as OWASP advises for CSV
injection; numbers are written as numbers (``DECIMALS`` decimals, as on the pages and in the
API), so ``-0.556`` stays ``-0.556``. Model names and organisations come from users, so nothing
is exempt.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Sequence
from typing import Any

from django.http import HttpResponse

__all__ = ["DECIMALS", "csv_cell", "csv_response", "csv_text", "published_float"]

DECIMALS = 3
"""Decimals of every number that is not whole which the site publishes, in the CSV downloads
and the API alike (``leaderboard.renderers``): the paper's precision, as the pages show it."""

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def published_float(value: float) -> float:
    """Return ``value`` rounded to ``DECIMALS`` decimals, -0.0 written as 0.0."""
    return round(value, DECIMALS) + 0.0


def csv_cell(value: Any) -> str:
    """Return one cell: numbers with ``DECIMALS`` decimals (whole numbers as they are), missing
    values empty, text neutralised when it could start a formula."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{published_float(value):.{DECIMALS}f}"
    text = str(value)
    if text.startswith(_FORMULA_START):
        return "'" + text
    return text


def csv_text(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """Return a CSV document: the header, then one line per row (cells as ``csv_cell``)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([csv_cell(name) for name in header])
    for row in rows:
        writer.writerow([csv_cell(value) for value in row])
    return buffer.getvalue()


def csv_response(
    filename: str, header: Sequence[str], rows: Iterable[Sequence[Any]]
) -> HttpResponse:
    """Return a CSV download named ``filename``."""
    response = HttpResponse(csv_text(header, rows), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
