"""The MirrorBench Django project: settings, URLs and the Celery app (``mirrorbench_site.celery``).

The Celery app is not imported here, as Django projects often do: a process loads it when it
first queues a task (``leaderboard.queue``) or runs them (``celery -A mirrorbench_site`` finds
``mirrorbench_site.celery``; ``leaderboard.tasks`` binds its tasks to it), so that a web process
or a ``manage.py`` command that queues nothing starts without Celery and kombu.
"""
