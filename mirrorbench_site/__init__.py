"""The MirrorBench Django project: settings, URLs and the Celery app."""

from mirrorbench_site.celery import app as celery_app

__all__ = ("celery_app",)
