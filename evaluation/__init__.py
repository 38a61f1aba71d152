"""The evaluation engine: prompts, agents, the episode runner, metrics and results bundles.

Plain Python: importable without Django settings.
"""
