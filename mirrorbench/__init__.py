"""MirrorBench as an Inspect AI task: ``inspect eval mirrorbench/mirror_test``.

One Inspect sample per (scene, level); the solver plays the episode through the engine's own
runner, prompts, parser and renderer (``evaluation``, ``simulation``), with Inspect's model
providers, limits, retries, concurrency and logs. ``mirrorbench import-inspect`` turns the log
into a results bundle (``mirrorbench.logs``). Needs the ``inspect`` extra
(``pip install '.[inspect]'``); Inspect finds the task through the ``inspect_ai`` entry point,
``mirrorbench._registry``.
"""
