"""Provider limits shared through the database: requests per window, parallel episodes."""

import pytest

from evaluation.config import RunConfig
from leaderboard.models import Episode, ModelEntry, ProviderWindow, Run
from leaderboard.runs.limits import rate_acquire
from leaderboard.runs.selectors import limits_for, parallel_slots_free, provider_key
from leaderboard.runs.services import run_create
from tests.leaderboard.factories import ModelEntryFactory

pytestmark = pytest.mark.django_db


class Clock:
    """Time as an input: advanced only by the limiter's own waiting."""

    def __init__(self):
        self.now = 1_000_000.0
        self.slept = []

    def time(self):
        return self.now

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.now += seconds


def test_requests_beyond_the_limit_wait_for_the_next_window(settings):
    settings.MIRRORBENCH_RATE_WINDOW_S = 60
    clock = Clock()
    for _ in range(7):
        rate_acquire("openai", 3, sleep=clock.sleep, clock=clock.time)
    counts = list(
        ProviderWindow.objects.filter(provider="openai")
        .order_by("window")
        .values_list("count", flat=True)
    )
    assert counts == [3, 3, 1]
    assert len(clock.slept) == 2 and all(0 < s <= 66 for s in clock.slept)


def test_limits_are_looked_up_for_the_endpoint_then_the_provider(settings):
    settings.MIRRORBENCH_PROVIDER_LIMITS = {
        "openai": {"rpm": 500, "parallel": 16},
        "openai|http://gpu-box:8000/v1": {"parallel": 2},
    }
    assert limits_for("openai:gpt-4o", None).rpm == 500
    assert limits_for("openai:qwen", "http://gpu-box:8000/v1").parallel == 2
    assert limits_for("anthropic:claude", None).parallel is None
    assert provider_key("openai:qwen", "http://gpu-box:8000/v1") == "openai|http://gpu-box:8000/v1"


def test_a_full_parallel_cap_holds_back_more_episodes(settings, django_capture_on_commit_callbacks):
    settings.MIRRORBENCH_PROVIDER_LIMITS = {"openai": {"parallel": 2}}
    entry = ModelEntryFactory(kind=ModelEntry.Kind.PROPRIETARY)
    with django_capture_on_commit_callbacks(execute=False):
        run = run_create(
            model_entry=entry, config=RunConfig(agent="openai:m", scenes="robot", levels=(0,))
        )
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING)
    run.refresh_from_db()
    assert parallel_slots_free(run)
    first_two = list(Episode.objects.filter(run=run).values_list("pk", flat=True)[:2])
    Episode.objects.filter(pk__in=first_two).update(status=Episode.Status.RUNNING)
    assert not parallel_slots_free(run)
    # Baselines and other providers are not held back.
    settings.MIRRORBENCH_PROVIDER_LIMITS = {"anthropic": {"parallel": 1}}
    assert parallel_slots_free(run)


def test_a_bad_limits_setting_stops_the_process_with_its_name(monkeypatch):
    from mirrorbench_site.env import ImproperlyConfiguredEnv, envjson

    monkeypatch.setenv("MIRRORBENCH_PROVIDER_LIMITS", "{oops")
    with pytest.raises(ImproperlyConfiguredEnv, match="MIRRORBENCH_PROVIDER_LIMITS"):
        envjson("MIRRORBENCH_PROVIDER_LIMITS", {})


def test_render_counters_live_in_the_limits_cache_not_the_evictable_default():
    """The default cache drops entries when full: counts kept there would forgive renders."""
    from django.core.cache import cache

    from leaderboard.runs.limits import counters_take

    clock = lambda: 1_000_000.0  # noqa: E731
    assert counters_take([("ip:198.51.100.7", "2/h")], clock=clock)
    assert counters_take([("ip:198.51.100.7", "2/h")], clock=clock)
    cache.clear()  # everything the default cache holds is gone, as under memory pressure
    assert not counters_take([("ip:198.51.100.7", "2/h")], clock=clock)
