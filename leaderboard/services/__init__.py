"""Writes, one module per kind of thing written (reads live in ``leaderboard.selectors``).

- ``entries``: benchmark versions with their scenes, model entries.
- ``imports``: the paper's published results, verified results bundles.
- ``scores``: a run's score tables and which runs the leaderboards list.
- ``runs``: runs evaluated here, from creation to their last episode (used by the tasks).
- ``frames``: rendered frames in Django storage.
- ``limits``: per-provider request counters shared by every worker.

Functions are named ``<entity>_<action>`` and take keyword-only arguments.
"""
