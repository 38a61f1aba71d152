"""The API's JSON renderer: DRF's, with every number that is not whole at ``DECIMALS`` decimals.

Scores computed here carry the full precision of a float (0.15199877330212697), the paper's
reported rows three decimals: published as they are, one row read 0.152 and the next
0.15199877330212697. Every float the API sends is rounded as the CSV downloads and the pages
write it (``leaderboard.exports.DECIMALS``, the paper's precision); whole numbers, strings and
the rest are untouched. The browsable API renders through this renderer too.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from rest_framework.renderers import JSONRenderer

from leaderboard.exports import DECIMALS, published_float


def published(data: Any) -> Any:
    """Return ``data`` with each float rounded (``published_float``), in lists and mappings."""
    if isinstance(data, float):
        return published_float(data) if math.isfinite(data) else data
    if isinstance(data, Mapping):
        return {key: published(value) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [published(value) for value in data]
    return data


class PublishedJSONRenderer(JSONRenderer):
    """DRF's JSON renderer, floats at ``DECIMALS`` decimals."""

    def render(
        self,
        data: Any,
        accepted_media_type: str | None = None,
        renderer_context: Mapping[str, Any] | None = None,
    ) -> bytes:
        return super().render(published(data), accepted_media_type, renderer_context)


__all__ = ["DECIMALS", "PublishedJSONRenderer", "published"]
