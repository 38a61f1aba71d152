"""The maximum output tokens of Claude models and the settings an Anthropic client sends, apart
from the client that sends them (:mod:`evaluation.adapters.anthropic`, which re-exports them):
reading them loads no SDK (the anthropic SDK took 1.5 s of CPU to import), so a process that
only writes a bundle header (the site's pages, ``manage.py evaluate`` queueing a run) does not
load it."""

from __future__ import annotations

from dataclasses import replace

from evaluation.messages import GenerationParams

__all__ = [
    "ANTHROPIC_FALLBACK_MAX_OUTPUT_TOKENS",
    "ANTHROPIC_MAX_OUTPUT_TOKENS",
    "anthropic_max_output_tokens",
    "anthropic_sent_params",
]

ANTHROPIC_MAX_OUTPUT_TOKENS: dict[str, int] = {
    "claude-opus-4-6": 128000,
    "claude-opus-4-5": 64000,
    "claude-opus-4-1": 32000,
    "claude-opus-4-0": 32000,
    "claude-opus-4-2025": 32000,  # claude-opus-4-20250514
    "claude-sonnet-4": 64000,  # 4, 4.5, 4.6
    "claude-haiku-4": 64000,  # 4.5
    "claude-3-7-sonnet": 64000,
    "claude-3-5-sonnet": 8192,
    "claude-3-5-haiku": 8192,
    "claude-3-opus": 4096,
    "claude-3-sonnet": 4096,
    "claude-3-haiku": 4096,
}
"""The maximum output tokens of known Claude models, by model name prefix (the longest that
matches wins). Sent as ``max_tokens``, which the API requires, when the user sets none: the
benchmark caps no answer (protocol v3). Opus 4 versions not listed fall back, deliberately:
``claude-opus-4`` alone would give a later Opus 4.x the 32000 of Opus 4.0 and 4.1."""
ANTHROPIC_FALLBACK_MAX_OUTPUT_TOKENS = 64000
"""``max_tokens`` for a model not in the table: generous on purpose. A model whose limit is lower
answers 400 naming its limit, and the client resends once with that limit (recorded)."""


def anthropic_max_output_tokens(model: str) -> int:
    """The maximum output tokens of ``model`` (``ANTHROPIC_MAX_OUTPUT_TOKENS``), or the fallback.

    The name is matched from its ``claude-`` on, so that prefixed names (``anthropic.claude-...``
    on some proxies) are known too.
    """
    name = model.lower()
    start = name.find("claude-")
    if start >= 0:
        name = name[start:]
    matches = [prefix for prefix in ANTHROPIC_MAX_OUTPUT_TOKENS if name.startswith(prefix)]
    if not matches:
        return ANTHROPIC_FALLBACK_MAX_OUTPUT_TOKENS
    return ANTHROPIC_MAX_OUTPUT_TOKENS[max(matches, key=len)]


def anthropic_sent_params(model: str, params: GenerationParams) -> GenerationParams:
    """The settings an Anthropic client for ``model`` sends given ``params``: ``max_tokens``
    resolved (the user's, else the model's maximum output) and no seed (the API has none)."""
    max_tokens = params.max_tokens
    if max_tokens is None:
        max_tokens = anthropic_max_output_tokens(model)
    return replace(params, max_tokens=max_tokens, seed=None)
