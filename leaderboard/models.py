"""Leaderboard data: model entries, benchmark versions, scenes, runs, episodes, steps, scores.

Rows hold data and single-row rules only; writes go through each feature's services and
reads through its selectors (``leaderboard/<feature>/``).
"""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models

from evaluation import vocabulary
from evaluation.bundle import episode_record, episode_repeat
from evaluation.config import RunConfig
from evaluation.confusion import episode_behaviour
from evaluation.public import ErrorSummary, error_summary
from leaderboard.accounts.names import MAX_KEY_CHARS, MAX_SKELETON_BYTES, name_key, name_skeletons
from simulation.catalogue import UnknownSceneError
from simulation.versions import BENCHMARK_VERSION


def _look_alike_column(max_length: int, **kwargs: Any) -> models.CharField[str | None, str | None]:
    """A unique column of a name's key or skeleton (``leaderboard.accounts.names``): NULL,
    unlike '', is never a duplicate, so a row whose value an older row has keeps it empty."""
    return models.CharField(max_length=max_length, unique=True, null=True, **kwargs)


class ModelEntry(models.Model):
    """A model (or a baseline, or the human reference) that appears on the leaderboard."""

    class Kind(models.TextChoices):
        PROPRIETARY = "proprietary", "Proprietary"
        OPEN_WEIGHTS = "open-weights", "Open weights"
        BASELINE = "baseline", "Baseline"
        HUMAN = "human", "Human"

    class Reasoning(models.TextChoices):
        """The reasoning mode or effort results were measured with."""

        OFF = "off", "No reasoning"
        ON = "on", "Reasoning on"
        MINIMAL = "minimal", "Minimal effort"
        LOW = "low", "Low effort"
        MEDIUM = "medium", "Medium effort"
        HIGH = "high", "High effort"

    class Scaffold(models.TextChoices):
        """Whether a model answered itself or an agent built around one did."""

        MODEL = "model", "Plain model"
        AGENT = "agent", "Agent scaffold"

    name = models.CharField(max_length=200, unique=True)
    name_key = _look_alike_column(
        MAX_KEY_CHARS,
        editable=False,
        help_text="The name case-folded (leaderboard.accounts.names.name_key): equal keys are one "
        "name. Empty on an entry stored before the check whose name an older entry already had.",
    )
    name_skeleton = _look_alike_column(
        MAX_SKELETON_BYTES,
        editable=False,
        help_text="What the name looks like (leaderboard.accounts.names.name_skeleton): no two "
        "entries share one. Empty as name_key is.",
    )
    name_skeleton_folded = _look_alike_column(
        MAX_SKELETON_BYTES,
        editable=False,
        help_text="What the name case-folded looks like (name_skeleton(folded=True)): no two "
        "entries share one. Empty as name_key is.",
    )
    slug = models.SlugField(max_length=200, unique=True)
    organisation = models.CharField(max_length=200, blank=True)
    kind = models.CharField(max_length=20, choices=Kind.choices)
    params_b = models.FloatField(
        null=True, blank=True, help_text="Parameter count in billions, where known."
    )
    release_date = models.DateField(
        null=True, blank=True, help_text="When the model (or this version of it) was released."
    )
    reasoning = models.CharField(
        max_length=10,
        choices=Reasoning.choices,
        blank=True,
        help_text="Reasoning mode or effort the results were measured with: off, on (a thinking "
        "mode without levels), minimal, low, medium, high; empty where not known.",
    )
    licence = models.CharField(
        max_length=100,
        blank=True,
        help_text="The weights' licence (an SPDX id such as Apache-2.0, or a name such as "
        "'Llama 3 Community'); 'proprietary' for a closed model; empty where not known.",
    )
    scaffold = models.CharField(
        max_length=10,
        choices=Scaffold.choices,
        blank=True,
        help_text="model: the model answered the benchmark's prompts itself; agent: an agent "
        "scaffold (tools, memory, planning) around a model answered; empty where not known.",
    )
    links = models.JSONField(default=list, blank=True, help_text='[{"label": ..., "url": ...}]')
    description = models.TextField(blank=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="model_entries",
        help_text="The user who created it for their runs; empty for entries the site manages "
        "(the paper's rows, baselines, the human reference).",
    )
    created = models.DateTimeField(auto_now_add=True)

    _stored_name: str | None = None
    """The name as loaded from the database (None for a new entry)."""

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "model entries"

    def __str__(self) -> str:
        return self.name

    def save(self, *args: Any, **kwargs: Any) -> None:
        """Keep ``name_key`` and the skeletons in step with a new or changed name.

        An unchanged name keeps them as they are (empty on an older look-alike's twin).
        """
        if self._state.adding or self.name != self._stored_name:
            self.name_key = name_key(self.name)
            self.name_skeleton, self.name_skeleton_folded = name_skeletons(self.name)
            fields = kwargs.get("update_fields")
            if fields is not None and "name" in fields:
                kwargs["update_fields"] = {
                    *fields,
                    "name_key",
                    "name_skeleton",
                    "name_skeleton_folded",
                }
        super().save(*args, **kwargs)
        self._stored_name = self.name

    @classmethod
    def from_db(cls, *args: Any, **kwargs: Any) -> ModelEntry:
        entry = super().from_db(*args, **kwargs)
        entry._stored_name = entry.__dict__.get("name")
        return entry

    @property
    def is_mllm(self) -> bool:
        """Proprietary and open-weights models; Table III averages over these only."""
        return self.kind in (self.Kind.PROPRIETARY, self.Kind.OPEN_WEIGHTS)


class BenchmarkVersion(models.Model):
    """One benchmark protocol (``simulation.versions``): results are comparable within one.

    ``name`` is the version every bundle, run and score carries ("v1", "v2"); the parts say
    what it is made of. Results of different versions are never ranked in one table.
    """

    name = models.CharField(max_length=20, unique=True)
    scene_set = models.CharField(max_length=20)
    prompt_version = models.CharField(max_length=20)
    dynamics_version = models.CharField(max_length=20)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["scene_set", "prompt_version", "dynamics_version"],
                name="unique_benchmark_version",
            )
        ]

    def __str__(self) -> str:
        return (
            f"{self.name} (scenes {self.scene_set}, prompts {self.prompt_version}, "
            f"dynamics {self.dynamics_version})"
        )

    @property
    def is_current(self) -> bool:
        """This engine runs, verifies and ranks this version."""
        return self.name == BENCHMARK_VERSION

    def as_dict(self) -> dict[str, str]:
        """Return the version as a bundle header names it (v1 headers named only the parts)."""
        parts = {"version": self.name} if self.name != "v1" else {}
        return {
            **parts,
            "scene_set": self.scene_set,
            "prompt_version": self.prompt_version,
            "dynamics_version": self.dynamics_version,
        }


class Scene(models.Model):
    """One scene of a benchmark version's scene set."""

    benchmark = models.ForeignKey(BenchmarkVersion, on_delete=models.CASCADE, related_name="scenes")
    scene_id = models.CharField(max_length=100)
    track = models.CharField(max_length=10)
    body = models.CharField(max_length=40)
    hand = models.CharField(max_length=40)
    mark = models.CharField(max_length=40)
    d0_steps = models.PositiveSmallIntegerField()
    max_steps = models.PositiveSmallIntegerField()

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["benchmark", "scene_id"], name="unique_scene_id")
        ]

    def __str__(self) -> str:
        return self.scene_id


def on_board_q(prefix: str = "", version: str = BENCHMARK_VERSION) -> models.Q:
    """The runs the boards show: listed, public, of benchmark ``version``; ``prefix`` is the
    path to the run (``"run__"`` from an episode or a score row)."""
    return models.Q(
        **{
            f"{prefix}listed": True,
            f"{prefix}visibility": Run.Visibility.PUBLIC,
            f"{prefix}benchmark__name": version,
            # Control conditions are measured beside the paper's protocol, never ranked in it.
            f"{prefix}condition": vocabulary.MAIN_CONDITION,
        }
    )


class RunQuerySet(models.QuerySet["Run"]):
    def public(self) -> RunQuerySet:
        """Runs anyone may see."""
        return self.filter(visibility=Run.Visibility.PUBLIC)

    def visible_to(self, user: Any) -> RunQuerySet:
        """Runs ``user`` may see: the public ones and their own (an anonymous visitor: public)."""
        if user is None or not getattr(user, "is_authenticated", False):
            return self.public()
        return self.filter(models.Q(visibility=Run.Visibility.PUBLIC) | models.Q(owner=user))

    def on_board(self, version: str = BENCHMARK_VERSION) -> RunQuerySet:
        """Runs the boards of ``version`` show (``on_board_q``)."""
        return self.filter(on_board_q("", version))


class EpisodeQuerySet(models.QuerySet["Episode"]):
    def on_board(self, version: str = BENCHMARK_VERSION) -> EpisodeQuerySet:
        """Episodes of the runs the boards of ``version`` show."""
        return self.filter(on_board_q("run__", version))


class RunScoreQuerySet(models.QuerySet["RunScore"]):
    def on_board(self, version: str = BENCHMARK_VERSION) -> RunScoreQuerySet:
        """Score rows of the runs the boards of ``version`` show."""
        return self.filter(on_board_q("run__", version))


class Run(models.Model):
    """One set of results for a model entry: reported in the paper, evaluated here, or uploaded."""

    class Source(models.TextChoices):
        REPORTED = "reported", "Reported in the paper"
        EVALUATED = "evaluated", "Evaluated here"
        VERIFIED = "verified", "Uploaded and verified"

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        COMPLETED = "completed", "Completed"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    class Visibility(models.TextChoices):
        PUBLIC = "public", "Public"
        PRIVATE = "private", "Private"

    model_entry = models.ForeignKey(ModelEntry, on_delete=models.CASCADE, related_name="runs")
    benchmark = models.ForeignKey(BenchmarkVersion, on_delete=models.PROTECT, related_name="runs")
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    source = models.CharField(max_length=20, choices=Source.choices)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING)
    visibility = models.CharField(
        max_length=20, choices=Visibility.choices, default=Visibility.PUBLIC
    )
    listed = models.BooleanField(
        default=False,
        help_text="Shown on the leaderboard: the newest complete public run of its model and "
        "source.",
    )
    cognitive_stability = models.FloatField(
        null=True,
        blank=True,
        help_text="Cognitive stability (the paper's appendix A-A) over the run's scenes, computed "
        "with the scores; empty for reported runs, which have no per-scene results.",
    )
    cognitive_stability_ci = models.JSONField(
        null=True, blank=True, help_text="Its 95% bootstrap interval over scenes: [low, high]."
    )
    condition = models.CharField(
        max_length=40,
        choices=[(name, vocabulary.condition_label(name)) for name in vocabulary.CONDITIONS],
        default=vocabulary.MAIN_CONDITION,
        help_text="The condition its episodes were played under: main (the paper's protocol, "
        "the only one the main tables rank) or a control (evaluation.vocabulary.CONDITIONS).",
    )
    agent = models.CharField(max_length=300, blank=True)
    citation = models.TextField(blank=True, help_text="Where reported results come from.")
    metadata = models.JSONField(default=dict, blank=True, help_text="The results bundle's header.")
    spec = models.JSONField(
        default=dict,
        blank=True,
        help_text="For runs evaluated here: agent, base URL, levels, scenes, seed, image size.",
    )
    """The run's configuration as JSON (``RunConfig.as_dict``); read it as ``config``."""
    error = models.TextField(blank=True, help_text="Why a run failed.")
    behaviour = models.JSONField(
        null=True,
        blank=True,
        help_text="Mirror-self confusion, bad-response and collision rates per level and track "
        "(evaluation.confusion.behaviour_json), computed with the scores.",
    )
    episodes_expected = models.PositiveIntegerField(default=0)
    input_tokens = models.BigIntegerField(
        null=True,
        blank=True,
        help_text="Input tokens its steps spent, as the provider measured them (answers served "
        "from the response cache left out); empty before the run ends or without a report.",
    )
    output_tokens = models.BigIntegerField(null=True, blank=True, help_text="Output tokens, alike.")
    cached_input_tokens = models.BigIntegerField(
        null=True,
        blank=True,
        help_text="Of the input tokens, those the provider reports served from its prompt cache; "
        "empty where it reports none.",
    )
    price = models.JSONField(
        null=True,
        blank=True,
        help_text="Prices given for this run at evaluation, US dollars per million tokens: "
        '{"input_per_mtok": 2.5, "output_per_mtok": 10, "cached_input_per_mtok": 1.25}; '
        "they come before the price table's.",
    )
    created = models.DateTimeField(auto_now_add=True)
    started = models.DateTimeField(null=True, blank=True)
    finished = models.DateTimeField(null=True, blank=True)

    objects = RunQuerySet.as_manager()

    class Meta:
        ordering = ["-created"]
        indexes = [models.Index(fields=["listed", "source"])]

    def __str__(self) -> str:
        return f"{self.model_entry} ({self.get_source_display()}, run {self.pk})"

    @property
    def config(self) -> RunConfig | None:
        """The configuration of a run evaluated here (from ``spec``); None for the others
        (reported and uploaded runs store none). Every stored ``spec`` loads
        (``RunConfig.from_dict``)."""
        return RunConfig.from_dict(self.spec) if self.spec else None


class ModelPrice(models.Model):
    """What an agent's tokens cost, in US dollars per million: the site's price table, which
    the admin edits. A run's dollars are its measured tokens at these prices."""

    agent = models.CharField(
        max_length=300,
        unique=True,
        help_text="The agent spec the price is for, as runs name it: openai:gpt-4o, "
        "anthropic:claude-sonnet-4-5, ...",
    )
    input_per_mtok = models.FloatField(validators=[MinValueValidator(0)])
    output_per_mtok = models.FloatField(validators=[MinValueValidator(0)])
    cached_input_per_mtok = models.FloatField(
        null=True,
        blank=True,
        validators=[MinValueValidator(0)],
        help_text="For input tokens the provider served from its cache; empty: the input price.",
    )
    source = models.CharField(
        max_length=300, blank=True, help_text="Where the price comes from (a pricing page)."
    )
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["agent"]

    def __str__(self) -> str:
        return f"{self.agent}: ${self.input_per_mtok:g} / ${self.output_per_mtok:g} per Mtok"

    def as_price(self) -> dict[str, float]:
        """The price as a run's ``price`` and ``MIRRORBENCH_PRICES`` entries hold it."""
        price = {"input_per_mtok": self.input_per_mtok, "output_per_mtok": self.output_per_mtok}
        if self.cached_input_per_mtok is not None:
            price["cached_input_per_mtok"] = self.cached_input_per_mtok
        return price


class Episode(models.Model):
    """One (scene, level) episode of a run, with its per-episode metrics; a run of several
    repeats has one per (scene, level, repeat)."""

    class Status(models.TextChoices):
        """The engine's episode statuses (``evaluation.vocabulary.EPISODE_STATUSES``)."""

        PENDING = vocabulary.PENDING, vocabulary.EPISODE_STATUSES[vocabulary.PENDING]
        RUNNING = vocabulary.RUNNING, vocabulary.EPISODE_STATUSES[vocabulary.RUNNING]
        COMPLETED = vocabulary.COMPLETED, vocabulary.EPISODE_STATUSES[vocabulary.COMPLETED]
        ERROR = vocabulary.ERROR, vocabulary.EPISODE_STATUSES[vocabulary.ERROR]

    UNFINISHED = (Status.PENDING, Status.RUNNING)

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="episodes")
    scene = models.ForeignKey(Scene, on_delete=models.PROTECT, related_name="episodes")
    level = models.PositiveSmallIntegerField()
    repeat = models.PositiveSmallIntegerField(
        default=0, help_text="Which repeat of its (scene, level) episode, 0 the first."
    )
    status = models.CharField(max_length=20, choices=Status.choices)
    error = models.TextField(
        blank=True,
        help_text="Why the episode ended in error, in full (the provider's own words): shown to "
        "the run's owner only.",
    )
    error_status = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="The HTTP status of the failed request (public)."
    )
    error_category = models.CharField(
        max_length=32,
        blank=True,
        help_text="What kind of failure (public): rate_limited, auth, redirect_refused, ...",
    )
    success = models.BooleanField(default=False)
    distances = models.JSONField(default=list)
    steps_taken = models.PositiveSmallIntegerField(default=0)
    confusion_rate = models.FloatField(
        null=True,
        blank=True,
        help_text="Share of executed moves towards the mark's mirror image and away from the mark.",
    )
    mirror_confused = models.BooleanField(
        default=False, help_text="The episode is dominated by mirror-self confusion."
    )
    bad_responses = models.PositiveSmallIntegerField(default=0)
    collisions = models.PositiveSmallIntegerField(default=0)
    tsr = models.FloatField(null=True)
    sir = models.FloatField(null=True)
    fcr = models.FloatField(null=True)
    pcr = models.FloatField(null=True)
    avg = models.FloatField(null=True)
    claim = models.CharField(
        max_length=40, blank=True, help_text="Token of the task that holds this episode."
    )
    heartbeat = models.DateTimeField(
        null=True, blank=True, help_text="Last sign of life of the task holding the episode."
    )
    attempts = models.PositiveSmallIntegerField(default=0)

    objects = EpisodeQuerySet.as_manager()

    class Meta:
        ordering = ["level", "scene_id", "repeat"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "scene", "level", "repeat"], name="unique_run_episode_repeat"
            )
        ]

    def __str__(self) -> str:
        again = f" repeat {self.repeat}" if self.repeat else ""
        return f"{self.scene} L{self.level}{again} (run {self.run_id})"

    @staticmethod
    def fields_from_record(record: dict[str, Any]) -> dict[str, Any]:
        """Return the row fields that a finished episode's bundle record sets."""
        metrics = record["metrics"] or dict.fromkeys(vocabulary.METRICS)
        error = record.get("error") or ""
        summary = error_summary(error)
        try:
            behaviour = episode_behaviour(record)
        except UnknownSceneError:  # a retired scene set's episode: no mirror image to aim at
            behaviour = None
        return {
            "status": record["status"],
            "error": error,
            "error_status": summary.status if summary else None,
            "error_category": summary.category if summary else "",
            "success": record["success"],
            "distances": record["distances"],
            "steps_taken": len(record["steps"]),
            "confusion_rate": behaviour.confusion_rate if behaviour else None,
            "mirror_confused": behaviour.mirror_confused if behaviour else False,
            "bad_responses": behaviour.bad_responses if behaviour else 0,
            "collisions": behaviour.collisions if behaviour else 0,
            **{m: metrics[m] for m in vocabulary.METRICS},
        }

    @classmethod
    def from_record(cls, *, run: Run, scene: Scene, record: dict[str, Any]) -> Episode:
        """Return an unsaved episode of ``run`` from a bundle episode record."""
        return cls(
            run=run,
            scene=scene,
            level=record["level"],
            repeat=episode_repeat(record),
            **cls.fields_from_record(record),
        )

    @property
    def error_summary(self) -> ErrorSummary | None:
        """The public part of the error: HTTP status and category; ``None`` without an error."""
        if not (self.error or self.error_category):
            return None
        return ErrorSummary(self.error_status, self.error_category or "unknown")

    def as_record(
        self, steps: list[dict[str, Any]], *, with_detail: bool = False
    ) -> dict[str, Any]:
        """Return the episode as a bundle episode record (``steps`` as ``Step.as_record`` gives).

        Its ``error`` is the public summary tag (``[rate_limited HTTP 429]``), which reads back
        as the same summary; ``with_detail`` gives the full text instead (for the run's owner).
        """
        completed = self.status == self.Status.COMPLETED
        summary = self.error_summary
        public_error = summary.tag if summary else None
        return episode_record(
            scene_id=self.scene.scene_id,
            track=self.scene.track,
            level=self.level,
            status=self.status,
            error=self.error if with_detail else public_error,
            d0_steps=self.scene.d0_steps,
            max_steps=self.scene.max_steps,
            success=self.success,
            distances=self.distances,
            steps=steps,
            metrics={m: getattr(self, m) for m in vocabulary.METRICS} if completed else None,
            repeat=self.repeat or None,
        )


class Step(models.Model):
    """One step of an episode: what the model answered and what happened."""

    episode = models.ForeignKey(Episode, on_delete=models.CASCADE, related_name="steps")
    index = models.PositiveSmallIntegerField()
    response = models.TextField(blank=True)
    option = models.PositiveSmallIntegerField(null=True)
    parse_error = models.TextField(blank=True)
    executed = models.BooleanField()
    distance_steps = models.PositiveSmallIntegerField()
    hand_cell = models.JSONField(default=list)
    frame_key = models.CharField(max_length=64, blank=True)
    input_tokens = models.PositiveIntegerField(null=True)
    output_tokens = models.PositiveIntegerField(null=True)
    cached_input_tokens = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Of the input tokens, those the provider served from "
        "its prompt cache; empty where it reports none.",
    )
    latency_s = models.FloatField(null=True)
    cached = models.BooleanField(default=False)
    """The answer came from the response cache: its tokens and latency were spent by an earlier
    run, and the run's totals leave them out."""
    request = models.JSONField(default=dict, blank=True)
    """What was sent besides the messages (``Step.REQUEST_KEYS`` of the bundle's ``request``):
    the generation settings exactly as sent, what was left out and why, the images' sizes."""

    REQUEST_KEYS = ("params", "not_sent", "images", "api_version")
    """The parts of a step's ``request`` the site keeps; never the endpoint (its path may carry
    a key or a deployment id) nor a provider's error body (``provider_error``)."""

    class Meta:
        ordering = ["index"]
        constraints = [
            models.UniqueConstraint(fields=["episode", "index"], name="unique_episode_step")
        ]
        indexes = [
            # The search's narrow filters read each episode's first and last step id from it
            # alone (leaderboard.search.selectors._step_ranges).
            models.Index(fields=["episode", "id"], name="leaderboard_step_episode_ids")
        ]

    def __str__(self) -> str:
        return f"step {self.index} of {self.episode}"

    @classmethod
    def values_from_record(cls, episode_id: int, record: dict[str, Any]) -> dict[str, Any]:
        """Return the field values (by attribute name) of a results-bundle step record."""
        return {
            "episode_id": episode_id,
            "index": record["index"],
            "response": record["response"],
            "option": record["option"],
            "parse_error": record["parse_error"] or "",
            "executed": record["executed"],
            "distance_steps": record["distance_steps"],
            "hand_cell": record["hand_cell"],
            "frame_key": record.get("frame_key") or "",
            "input_tokens": record.get("input_tokens"),
            "output_tokens": record.get("output_tokens"),
            "cached_input_tokens": record.get("cached_input_tokens"),
            "latency_s": record.get("latency_s"),
            "cached": bool(record.get("cached", False)),
            "request": {
                key: value
                for key, value in (record.get("request") or {}).items()
                if key in cls.REQUEST_KEYS
            },
        }

    @classmethod
    def from_record(cls, episode_id: int, record: dict[str, Any]) -> Step:
        """Return an unsaved step from a results-bundle step record."""
        return cls(**cls.values_from_record(episode_id, record))

    def as_record(self) -> dict[str, Any]:
        """Return the step as a results-bundle step record."""
        return {
            "index": self.index,
            "response": self.response,
            "option": self.option,
            "parse_error": self.parse_error or None,
            "executed": self.executed,
            "distance_steps": self.distance_steps,
            "hand_cell": self.hand_cell,
            "frame_key": self.frame_key or None,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "latency_s": self.latency_s,
            "cached": self.cached,
            **(
                {"cached_input_tokens": self.cached_input_tokens}
                if self.cached_input_tokens is not None
                else {}
            ),
            **({"request": self.request} if self.request else {}),
        }


class RunScore(models.Model):
    """One cell row of a run's tables: a table (level 0-3 or overall) x a track, all metrics.

    Reported runs take these from the paper; evaluated runs compute them from their episodes
    once, when results arrive (``services.run_scores_refresh``), never per request.
    """

    TABLES = vocabulary.TABLES
    TRACKS = vocabulary.TRACKS

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="scores")
    table = models.CharField(max_length=10)
    track = models.CharField(max_length=10)
    tsr = models.FloatField()
    sir = models.FloatField()
    fcr = models.FloatField()
    pcr = models.FloatField()
    avg = models.FloatField()
    ci = models.JSONField(
        null=True, blank=True, help_text='95% bootstrap intervals: {"tsr": [lo, hi], ...}'
    )
    episodes = models.PositiveIntegerField(null=True, blank=True)
    spread = models.JSONField(
        null=True,
        blank=True,
        help_text="A run of several repeats, its Overall column only: how its repeats differ "
        '(evaluation.metrics.RepeatSpread.as_dict: {"repeats": K, "low": {...}, "high": {...}, '
        '"sd": {...}, "paired": n, "flipped": n, "flip_rate": x}); null with one repeat.',
    )

    objects = RunScoreQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "table", "track"], name="unique_run_score")
        ]
        indexes = [models.Index(fields=["table"])]

    def __str__(self) -> str:
        return f"{self.run} table {self.table} {self.track}"


class RunSecret(models.Model):
    """The encrypted API key of a hosted run; deleted when the run ends."""

    run = models.OneToOneField(Run, on_delete=models.CASCADE, related_name="secret")
    api_key = models.BinaryField()
    created = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"API key of run {self.run_id} (encrypted)"


class ProviderWindow(models.Model):
    """Requests sent to one provider in one time window, counted by every worker alike."""

    provider = models.CharField(max_length=300)
    window = models.BigIntegerField(help_text="Start of the window, in windows since the epoch.")
    count = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["provider", "window"], name="unique_provider_window")
        ]

    def __str__(self) -> str:
        return f"{self.provider} window {self.window}: {self.count}"


class DataVersion(models.Model):
    """One row whose token changes whenever what the tables show changes.

    Cached tables, CSVs and charts are keyed on it (``services.data_version``): a new token
    makes every one of them stale at once, on every machine, since the row lives in the
    database they all share.
    """

    token = models.CharField(max_length=32)

    def __str__(self) -> str:
        return f"data version {self.token}"


class Frame(models.Model):
    """A frame that a stored episode or the scene gallery shows, by its content key.

    The key (``simulation.renderer.frame_key``) names the pixels: scene, hand cell, size, mirror
    and renderer build. A row is registered before anything is rendered, so only frames of
    stored episodes (and the gallery's) can ever be asked for or rendered; the files exist
    once ``stored`` is set (``services.frames.frame_store``): the lossless PNG the model saw,
    a WebP for the viewer and a small WebP thumbnail.
    """

    key = models.CharField(max_length=40, primary_key=True)
    scene = models.ForeignKey(Scene, on_delete=models.PROTECT, related_name="frames")
    cell = models.JSONField(help_text="The hand's grid offset from its start: [x, y, z].")
    size = models.PositiveSmallIntegerField()
    mirror = models.BooleanField(default=True, help_text="False for the no-mirror control.")
    condition = models.CharField(
        max_length=40,
        default=vocabulary.MAIN_CONDITION,
        help_text="The condition the scene is drawn under (part of the key unless main).",
    )
    renderer = models.CharField(max_length=100, help_text="simulation.backends.renderer_version()")
    png_bytes = models.PositiveIntegerField(null=True, blank=True)
    webp_bytes = models.PositiveIntegerField(null=True, blank=True)
    thumb_bytes = models.PositiveIntegerField(null=True, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    stored = models.DateTimeField(null=True, blank=True)
    used = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When it was last stored or served (at most hourly): the eviction order.",
    )

    class Meta:
        indexes = [models.Index(fields=["stored"]), models.Index(fields=["used"])]

    def __str__(self) -> str:
        return f"frame {self.key} ({self.scene} at {self.cell})"


class Animation(models.Model):
    """An episode's animation file in storage (``replays.services.episode_animation_store``).

    Animations are kept like frames, in the frames' disk budget (``MIRRORBENCH_FRAMES_MAX_BYTES``):
    the sweep (``frames.services.frames_evict``) deletes the least recently used of frames and
    animations together, and a request makes an evicted animation again.
    """

    path = models.CharField(max_length=200, primary_key=True)
    size_bytes = models.PositiveIntegerField()
    stored = models.DateTimeField(auto_now_add=True)
    used = models.DateTimeField(help_text="When it was last made or served (at most hourly).")

    class Meta:
        indexes = [models.Index(fields=["used"])]

    def __str__(self) -> str:
        return f"animation {self.path}"


class AccountName(models.Model):
    """A user name's key and skeletons (``leaderboard.accounts.names``): no two accounts look alike.

    Kept by ``services.accounts`` whenever a user is saved. Sign-up refuses a name whose key or
    either skeleton another account has; a column is empty where an older account already had the
    value (accounts from before the check, or made by an administrator).
    """

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        primary_key=True,
        on_delete=models.CASCADE,
        related_name="account_name",
    )
    key = _look_alike_column(MAX_KEY_CHARS)
    skeleton = _look_alike_column(MAX_SKELETON_BYTES)
    skeleton_folded = _look_alike_column(MAX_SKELETON_BYTES)

    def __str__(self) -> str:
        return f"user name of {self.user}"


class ApiToken(models.Model):
    """A user's API token: only its SHA-256 is kept; the key is shown once, when created."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100, help_text="What the token is for, e.g. 'CI'.")
    prefix = models.CharField(max_length=12, help_text="The key's first characters, to tell it.")
    key_hash = models.CharField(max_length=64, unique=True)
    created = models.DateTimeField(auto_now_add=True)
    last_used = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…) of {self.user}"


class Submission(models.Model):
    """A verified results bundle uploaded by a user, and its moderation.

    Only bundles that verify become submissions (a rejected upload stores nothing). The bundle
    is kept by content hash, one copy however often it is uploaded; the run it became is
    private to its owner until the owner asks for review and a moderator approves it.
    """

    class Review(models.TextChoices):
        DRAFT = "draft", "Private (not submitted for review)"
        PENDING = "pending", "Waiting for a moderator"
        APPROVED = "approved", "Approved: on the board"
        REFUSED = "refused", "Refused by a moderator"
        FLAGGED = "flagged", "Flagged: hidden from the board"

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="submissions"
    )
    sha256 = models.CharField(max_length=64, help_text="Of the bundle's bytes.")
    bundle_path = models.CharField(max_length=200, help_text="Where the bundle is in storage.")
    bundle_bytes = models.PositiveBigIntegerField()
    model_name = models.CharField(max_length=200)
    organisation = models.CharField(max_length=200, blank=True)
    kind = models.CharField(max_length=20, choices=ModelEntry.Kind.choices)
    params_b = models.FloatField(null=True, blank=True)
    link = models.URLField(max_length=500, blank=True, help_text="Code, model card or paper.")
    review = models.CharField(max_length=20, choices=Review.choices, default=Review.DRAFT)
    review_note = models.TextField(
        blank=True, help_text="A moderator's reason, shown to the owner (and on a flagged entry)."
    )
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="reviewed_submissions",
    )
    allow_partial = models.BooleanField(
        default=False, help_text="A moderator lets an incomplete bundle onto the board."
    )
    episodes = models.PositiveIntegerField(default=0)
    partial = models.BooleanField(default=False, help_text="Fewer than all 264 episodes.")
    report = models.JSONField(
        default=dict, blank=True, help_text="Verification: what was checked, counts, seconds."
    )
    run = models.OneToOneField(
        Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="submission"
    )
    reproduce_agent = models.CharField(
        max_length=300,
        blank=True,
        help_text="The model the submitter says produced the bundle, as an agent spec "
        "(openai:MODEL, anthropic:MODEL): the server re-runs a sample of episodes with it.",
    )
    reproduce_base_url = models.URLField(max_length=500, blank=True)
    reproduction_run = models.OneToOneField(
        Run,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="reproduces",
        help_text="The server's re-run of a random sample of the submission's episodes.",
    )
    reproduction = models.JSONField(
        default=dict,
        blank=True,
        help_text="How the re-run agrees with the bundle: per episode and overall.",
    )
    created = models.DateTimeField(auto_now_add=True)
    reviewed = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created"]
        constraints = [
            models.UniqueConstraint(fields=["owner", "sha256"], name="unique_submission_bundle")
        ]
        indexes = [models.Index(fields=["review"])]

    def __str__(self) -> str:
        return f"submission {self.pk}: {self.model_name} by {self.owner}"


class Play(models.Model):
    """An episode played in the browser that is not kept on the board (``services.play``).

    An anonymous visitor's episodes, and a signed-in player's replays of a scene and level they
    have already played, live here while they are played: the options answered so far, checked
    step by step like a stored episode's. Rows are deleted ``PLAY_TTL`` after their last move;
    none is ever part of a run, a score or a bundle.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE
    )
    session = models.CharField(
        max_length=64, blank=True, help_text="SHA-256 of the anonymous visitor's session key."
    )
    scene = models.ForeignKey(Scene, on_delete=models.CASCADE, related_name="plays")
    level = models.PositiveSmallIntegerField()
    options = models.JSONField(default=list, help_text="The options answered, in order.")
    steps_taken = models.PositiveSmallIntegerField(default=0)
    done = models.BooleanField(default=False)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(help_text="When the current step was shown.")

    class Meta:
        indexes = [models.Index(fields=["updated"])]

    def __str__(self) -> str:
        return f"play {self.pk} of {self.scene} L{self.level}"


class EmailConfirmation(models.Model):
    """The e-mail address an account gave at sign-up, and when its owner confirmed it.

    Sign-up makes the row, unconfirmed, and mails a signed link to the address; following it
    sets ``confirmed`` (``services.mail``). Until then the account may browse and play but not
    upload, submit or evaluate, and no password-reset mail goes to the address. Accounts
    without a row (made by staff in the admin or ``createsuperuser``, or before sign-ups
    confirmed addresses) count as confirmed, as long as their address is the one they had.
    """

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        primary_key=True,
        on_delete=models.CASCADE,
        related_name="email_confirmation",
    )
    email = models.EmailField(help_text="The address the confirmation link was sent to.")
    confirmed = models.DateTimeField(null=True, blank=True)
    created = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        state = "confirmed" if self.confirmed else "not confirmed"
        return f"e-mail of {self.user}: {state}"
