"""MirrorBench metrics: episode scores, the paper's tables, cognitive stability and bootstrap CIs.

Plain Python and numpy, no Django: the ``mirrorbench score`` command and the web leaderboard
both compute their numbers here.

An episode is scored on its distance trajectory ``D = [d_0, d_1, ..., d_T]``: the Manhattan
distance between hand and goal in whole grid steps before the first step and after each of the
``T`` steps taken. A bad response or a refused move uses up a step and repeats the last
distance. With the threshold ``d_th`` (1 step), the paper's Table I defines::

    TSR = 1 if d_T <= d_th else 0
    SIR = (1/T) * #{i < T : d_{i+1} < d_i}               (0 when T == 0)
    FCR = 1 - (d_T - d_th) / (d_0 - d_th)
    PCR = 1 - (min_i d_i - d_th) / (d_0 - d_th)
    AVG = (TSR + SIR + FCR + PCR) / 4

Nothing is clipped: an agent that ends further away than it started has a negative FCR. Every
executed move changes the distance by exactly one step and a success ends the episode, so a
successful episode ends at ``d = d_th`` with FCR = PCR = 1.

Aggregates follow the paper's tables (checked against its numbers to 0.001):

* A level table has the columns Human, Robot and Overall. In each, TSR, FCR and PCR are means
  over episodes and SIR is pooled over steps (improving steps / steps). Overall pools all the
  level's episodes of both tracks; it is not the mean of the Human and Robot columns. AVG is
  the mean of the cell's four metrics.
* Table II (a model's row) is the mean of its four level tables, cell by cell.
* Table III is, per level and track, the mean over models of the AVG cells, plus their mean
  over levels.

Only completed episodes count: an episode whose status is anything but ``"completed"`` (a
transport ``"error"``, one still running) is left out of every aggregate here.

Tables are plain dicts, ready for JSON: levels are keyed by their number as a string (``"0"``
to ``"3"``), tracks by ``"human"``, ``"robot"`` and ``"overall"``, metrics by ``METRICS``.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple, TypedDict, TypeVar

from evaluation.deferred import Deferred
from evaluation.vocabulary import (
    AVG,
    COMPLETED,
    LEVEL_KEYS,
    LEVELS,
    METRICS,
    OVERALL,
    SCENE_TRACKS,
    TRACK_KEYS,
    TRACKS,
)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
else:
    np = Deferred("numpy")  # bootstraps and spreads: a site process loads it on first use

D_TH = 1
"""d_th: the success threshold, in grid steps."""

TrackScores = dict[str, float]
"""One cell group of a table: metric name -> value, for every name in ``METRICS``."""
LevelTable = dict[str, TrackScores | None]
"""Track name (``TRACKS``) -> its scores, or None when the track has no completed episode."""
Interval = tuple[float, float]
IntervalTable = dict[str, dict[str, Interval] | None]
"""Track name -> metric name -> (low, high), or None when the track has no completed episode."""
RankInterval = tuple[int, int]
"""The best and the worst rank of a row's rank interval (``rank_intervals``), 1 the best."""
RowKey = TypeVar("RowKey", bound=Hashable)
"""What names a row of ``rank_intervals``: a run id on the site, a model name elsewhere."""


class ScoreJSON(TypedDict):
    """A model's scores: the ``mirrorbench score --json`` document."""

    levels: dict[str, LevelTable]
    """Level tables (the paper's Tables IV-VII), keyed ``"0"`` to ``"3"``."""
    overall: LevelTable
    """The mean of the level tables (the model's row of Table II)."""


class IntervalJSON(TypedDict):
    """Confidence intervals for every cell of a ``ScoreJSON``, in the same shape."""

    levels: dict[str, IntervalTable]
    overall: IntervalTable


@dataclass(frozen=True)
class EpisodeScore:
    """The paper's four metrics of one episode, their mean, and the counts SIR pools."""

    tsr: float
    sir: float
    fcr: float
    pcr: float
    avg: float
    improving_steps: int
    """Steps that strictly decreased the distance."""
    steps: int
    """T, the number of steps taken."""


@dataclass(frozen=True)
class EpisodeResult:
    """One episode of a model, as the aggregates need it.

    Attributes:
        scene_id: The scene's stable id, e.g. ``"male_0-mano_white-splash"``.
        track: ``"Human"`` or ``"Robot"``.
        level: The prompt level, 0 to 3.
        distances: The distance trajectory ``d_0 .. d_T`` in grid steps.
        status: ``"completed"``, or anything else (``"error"``) to leave the episode out.
        repeat: Which repeat of the (scene, level) episode this is, 0 the first (a run of
            ``repeats`` K plays every episode K times).

    Raises:
        ValueError: If the track or the level is not one of the protocol's.
    """

    scene_id: str
    track: str
    level: int
    distances: tuple[int, ...]
    status: str = COMPLETED
    repeat: int = 0

    def __post_init__(self) -> None:
        if self.track not in SCENE_TRACKS:
            raise ValueError(f"{self.scene_id}: track must be one of {SCENE_TRACKS}")
        if self.level not in LEVELS:
            raise ValueError(f"{self.scene_id}: level must be one of {LEVELS}")
        # Trajectories read back from JSON arrive as lists; keep the result hashable.
        object.__setattr__(self, "distances", tuple(self.distances))


def episode_score(distances: Sequence[int], d_th: int = D_TH) -> EpisodeScore:
    """Return the metrics of one episode (the paper's Table I).

    Args:
        distances: The trajectory ``d_0 .. d_T`` in whole grid steps, non-negative.
        d_th: The success threshold in grid steps.

    Returns:
        TSR in {0, 1}; SIR in [0, 1] (0.0 when no step was taken); FCR and PCR unclipped, so
        FCR is negative when the episode ends further away than it started; AVG their mean.

    Raises:
        ValueError: If the trajectory is empty, has a negative or non-integer distance, or
            starts within the threshold (``d_0 <= d_th``), where FCR and PCR are undefined.
    """
    tsr, improving, steps, closed, best, span = _metric_ratios(distances, d_th)
    # Each metric is a ratio of integers, and an int / int division is correctly rounded: the
    # float nearest the exact value, as float(Fraction(...)) gives, without making Fractions.
    return EpisodeScore(
        tsr=float(tsr),
        sir=improving / steps if steps else 0.0,
        fcr=closed / span,
        pcr=best / span,
        avg=float(_exact_avg(tsr, improving, steps, closed, best, span)),
        improving_steps=improving,
        steps=steps,
    )


def _metric_ratios(distances: Sequence[int], d_th: int) -> tuple[int, int, int, int, int, int]:
    """Return the integers the metrics are ratios of: TSR (0 or 1), the improving steps and the
    steps (SIR = improving / steps), ``d_0 - d_T`` and ``d_0 - min d_t`` (FCR and PCR, over
    ``span = d_0 - d_th``), and the span.

    FCR = 1 - (d_T - d_th) / span = (d_0 - d_T) / span, and PCR likewise with the closest
    distance."""
    if len(distances) == 0:
        raise ValueError("a distance trajectory needs at least d_0")
    if all(type(d) is int for d in distances):  # what the engine and JSON give
        trajectory = list(distances)
        if min(trajectory) < 0:
            raise ValueError(f"distances must be non-negative integers, got {trajectory}")
    elif any(isinstance(d, bool) or int(d) != d or d < 0 for d in distances):
        raise ValueError(f"distances must be non-negative integers, got {list(distances)}")
    else:
        trajectory = [int(d) for d in distances]
    d_0, d_t = trajectory[0], trajectory[-1]
    if d_0 <= d_th:
        raise ValueError(f"d_0 = {d_0} is within the threshold d_th = {d_th}")
    steps = len(trajectory) - 1
    improving = sum(after < before for before, after in itertools.pairwise(trajectory))
    return int(d_t <= d_th), improving, steps, d_0 - d_t, d_0 - min(trajectory), d_0 - d_th


class _Ratio(NamedTuple):
    """An exact ratio of integers (the denominator positive): compared, never rounded."""

    numerator: int
    denominator: int

    def __float__(self) -> float:
        return self.numerator / self.denominator  # correctly rounded


def _exact_avg(tsr: int, improving: int, steps: int, closed: int, best: int, span: int) -> _Ratio:
    """AVG = (TSR + SIR + FCR + PCR) / 4 over the common denominator ``4 * T * span`` (the
    ``_metric_ratios`` integers); an episode of no step has SIR 0, and T counts as 1."""
    per_step = steps or 1
    numerator = tsr * per_step * span + improving * span + (closed + best) * per_step
    return _Ratio(numerator, 4 * per_step * span)


def _completed(results: Iterable[EpisodeResult]) -> list[EpisodeResult]:
    """Return the completed episodes, checking that they can be aggregated together.

    Raises:
        ValueError: If two completed episodes share a scene, level and repeat, or a scene
            appears under both tracks.
    """
    completed: list[EpisodeResult] = []
    seen: set[tuple[str, int, int]] = set()
    tracks: dict[str, str] = {}
    for result in results:
        if result.status != COMPLETED:
            continue
        key = (result.scene_id, result.level, result.repeat)
        if key in seen:
            again = f" in repeat {result.repeat}" if result.repeat else ""
            raise ValueError(
                f"two completed episodes of {result.scene_id} at level {result.level}{again}"
            )
        seen.add(key)
        if tracks.setdefault(result.scene_id, result.track) != result.track:
            raise ValueError(f"scene {result.scene_id} appears under both tracks")
        completed.append(result)
    return completed


def _pooled(scores: Sequence[EpisodeScore]) -> TrackScores | None:
    """Return a table cell group: TSR, FCR, PCR as episode means, SIR pooled over steps."""
    if not scores:
        return None
    n = len(scores)
    steps = sum(s.steps for s in scores)
    cell = {
        "tsr": math.fsum(s.tsr for s in scores) / n,
        "sir": sum(s.improving_steps for s in scores) / steps if steps else 0.0,
        "fcr": math.fsum(s.fcr for s in scores) / n,
        "pcr": math.fsum(s.pcr for s in scores) / n,
    }
    cell[AVG] = (cell["tsr"] + cell["sir"] + cell["fcr"] + cell["pcr"]) / 4
    return cell


def level_table(results: Iterable[EpisodeResult], level: int) -> LevelTable:
    """Return the level table of one level (a model's row of the paper's Tables IV-VII).

    Only completed episodes of that level count. Human and Robot hold that track's episodes;
    Overall pools both tracks' episodes (it is not the mean of the Human and Robot columns).
    In each, TSR, FCR and PCR are means over episodes, SIR is the number of improving steps
    over the number of steps (0.0 when no step was taken), and AVG the mean of the four.

    Returns:
        ``{"human": {...}, "robot": {...}, "overall": {...}}``, each mapping every name in
        ``METRICS`` to a value; a track without completed episodes maps to None.

    Raises:
        ValueError: If ``level`` is not a protocol level, or the episodes cannot be aggregated
            together (see ``EpisodeResult``, ``episode_score``).
    """
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, got {level}")
    scored = [
        (r.track, episode_score(r.distances)) for r in _completed(results) if r.level == level
    ]
    return {
        **{key: _pooled([s for t, s in scored if t == track]) for key, track in TRACK_KEYS.items()},
        OVERALL: _pooled([s for _, s in scored]),
    }


def level_tables(results: Iterable[EpisodeResult]) -> dict[str, LevelTable]:
    """Return the level tables of all four levels, keyed ``"0"`` to ``"3"``.

    Every level is present; a level without completed episodes has None for every track.
    """
    episodes = list(results)
    return {
        key: level_table(episodes, level) for key, level in zip(LEVEL_KEYS, LEVELS, strict=True)
    }


def overall_table(tables: Mapping[str, LevelTable]) -> LevelTable:
    """Return the mean of level tables, cell by cell (a model's row of the paper's Table II).

    Args:
        tables: Level tables, normally the four of ``level_tables``.

    Returns:
        A table of the same shape. A track that is None in any of the given tables is None:
        its mean over the levels is undefined.

    Raises:
        ValueError: If no table is given.
    """
    if not tables:
        raise ValueError("the overall table needs at least one level table")
    overall: LevelTable = {}
    for track in TRACKS:
        cells = [table.get(track) for table in tables.values()]
        if any(cell is None for cell in cells):
            overall[track] = None
            continue
        overall[track] = {
            m: _mean([cell[m] for cell in cells if cell is not None]) for m in METRICS
        }
    return overall


def score_json(results: Iterable[EpisodeResult]) -> ScoreJSON:
    """Return a model's level tables and overall row: the ``mirrorbench score --json`` document.

    Only completed episodes count. See ``level_tables`` and ``overall_table`` for the contract
    of each part.
    """
    levels = level_tables(results)
    return {"levels": levels, "overall": overall_table(levels)}


def track_table(
    level_tables_by_model: Mapping[str, Mapping[str, LevelTable]],
) -> dict[str, dict[str, float | None]]:
    """Return the paper's Table III: the mean over models of the AVG cells, by level and track.

    Args:
        level_tables_by_model: Model name -> its level tables keyed ``"0"`` to ``"3"`` (the
            ``levels`` of a ``ScoreJSON``).

    Returns:
        ``{"0": {"human": ..., "robot": ..., "overall": ...}, ..., "3": {...}, "avg": {...}}``;
        the ``"avg"`` row is the mean of the four level rows. A cell is None when a model
        lacks that level or track, and an ``"avg"`` cell is None when a level cell is.

    Raises:
        ValueError: If no model is given.
    """
    if not level_tables_by_model:
        raise ValueError("Table III needs at least one model")
    rows: dict[str, dict[str, float | None]] = {}
    for level in LEVEL_KEYS:
        rows[level] = {}
        for track in TRACKS:
            cells = [tables.get(level, {}).get(track) for tables in level_tables_by_model.values()]
            rows[level][track] = (
                None
                if any(cell is None for cell in cells)
                else _mean([cell[AVG] for cell in cells if cell is not None])
            )
    rows[AVG] = {}
    for track in TRACKS:
        values = [rows[level][track] for level in LEVEL_KEYS]
        rows[AVG][track] = (
            None if any(v is None for v in values) else _mean([v for v in values if v is not None])
        )
    return rows


def cognitive_stability(results: Iterable[EpisodeResult]) -> float | None:
    """Return a model's Cognitive Stability (the paper's appendix A-A, equation 1).

    The paper defines, with ``s_{m,l}^{(k)}`` the score of model ``m`` on scene ``k`` at level
    ``l`` and ``S`` the set of evaluated scenes::

        CS(m) = (1/|S|) * sum_{k in S} sum_{l=0}^{2} sign(s_{m,l}^{(k)} - s_{m,l+1}^{(k)})

    with ``sign(x)`` = 1, 0, -1 for x > 0, x = 0, x < 0. Here ``s`` is the episode's AVG (the
    mean of TSR, SIR, FCR and PCR). Each scene adds +1 for every level step where the score
    falls and -1 for every one where it rises, so CS lies in [-3, 3]: 3 when every scene's score
    strictly falls from level 0 to level 3, -3 when it strictly rises at every level.

    ``S`` is the set of scenes with a completed episode at all four levels; a scene with an
    errored or missing level is left out, since its sign terms are undefined. Scores are
    compared exactly (as fractions), so two episodes with equal AVG always give sign 0.

    Returns:
        CS, or None when no scene has a completed episode at every level.

    Raises:
        ValueError: If the episodes cannot be aggregated together.
    """
    terms = _stability_terms(results)
    if not terms:
        return None
    return sum(terms.values()) / len(terms)


def _stability_terms(results: Iterable[EpisodeResult]) -> dict[tuple[str, str, int], int]:
    """Return each scene's sum of sign terms of equation 1, keyed by (track, scene id, repeat).

    Only scenes with a completed episode at all four levels have one (see
    ``cognitive_stability``); with several repeats each repeat of a scene is one member of
    ``S``, so CS is the mean over scenes and repeats.
    """
    by_scene: dict[tuple[str, str, int], dict[int, _Ratio]] = {}
    for result in _completed(results):
        tsr, improving, steps, closed, best, span = _metric_ratios(result.distances, D_TH)
        key = (result.track, result.scene_id, result.repeat)
        by_scene.setdefault(key, {})[result.level] = _exact_avg(
            tsr, improving, steps, closed, best, span
        )
    return {
        key: sum(_sign(scores[level], scores[level + 1]) for level in LEVELS[:-1])
        for key, scores in by_scene.items()
        if len(scores) == len(LEVELS)
    }


def _check_bootstrap(n_resamples: int, confidence: float) -> None:
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be at least 1, got {n_resamples}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")


def cognitive_stability_ci(
    results: Iterable[EpisodeResult],
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> Interval | None:
    """Return a percentile bootstrap confidence interval for ``cognitive_stability``.

    The resampling unit is the scene, as in ``bootstrap_ci``: the scenes of ``S`` (those with
    a completed episode at all four levels) are drawn with replacement within their track, so
    each resample keeps the track sizes of ``S``, and CS is the mean of the drawn scenes' sign
    sums. The interval is the ``(1 - confidence) / 2`` and ``(1 + confidence) / 2``
    percentiles (linear interpolation) of the resampled values.

    Args:
        results: A model's episodes.
        n_resamples: Number of bootstrap resamples.
        seed: Seed of the random generator; the same seed gives the same interval.
        confidence: Coverage of the interval, in (0, 1).

    Returns:
        ``(low, high)``, or None when ``cognitive_stability`` is None.

    Raises:
        ValueError: If ``n_resamples`` < 1, ``confidence`` is outside (0, 1), or the episodes
            cannot be aggregated together.
    """
    _check_bootstrap(n_resamples, confidence)
    terms = _stability_terms(results)
    if not terms:
        return None
    rng = np.random.default_rng(seed)
    totals = np.zeros(n_resamples)
    for track in SCENE_TRACKS:
        values = np.array([t for (tr, *_), t in sorted(terms.items()) if tr == track], float)
        n = len(values)
        if n:
            # How many times each scene is drawn in each resample: n draws with replacement.
            counts = rng.multinomial(n, np.full(n, 1 / n), size=n_resamples)
            totals += counts @ values
    samples = totals / len(terms)
    low, high = np.percentile(samples, [50 * (1 - confidence), 50 * (1 + confidence)])
    return float(low), float(high)


def bootstrap_ci(
    results: Iterable[EpisodeResult],
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> IntervalJSON:
    """Return percentile bootstrap confidence intervals for every cell of ``score_json``.

    The resampling unit is the scene: a resampled scene brings its episodes at all four levels,
    so the levels stay paired as they are in the benchmark. Scenes are resampled with
    replacement within their track (48 Human and 18 Robot scenes in the v1 set), which keeps
    the design's track sizes fixed; the Overall column pools the two resampled tracks. Each
    resample is scored exactly as ``score_json`` scores the original data, and the interval is
    the ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` percentiles (linear
    interpolation) of the resampled values.

    With several repeats of each episode (``EpisodeResult.repeat``) the bootstrap has a second
    stage: each drawn scene draws K of its K repeats with replacement, and their mean stands
    for the scene, so the interval holds the variance between repeats as well as between
    scenes (docs/evaluation.md, Repeats).

    Only completed episodes count, and only scenes with at least one of them are resampled. A
    resample in which a cell has no episode (possible only when some episodes errored) is left
    out of that cell's percentiles.

    Args:
        results: A model's episodes.
        n_resamples: Number of bootstrap resamples.
        seed: Seed of the random generator; the same seed gives the same intervals.
        confidence: Coverage of the interval, in (0, 1).

    Returns:
        The shape of ``score_json`` with ``(low, high)`` in place of each value; a track that
        is None in ``score_json`` is None here.

    Raises:
        ValueError: If ``n_resamples`` < 1, ``confidence`` is outside (0, 1), or the episodes
            cannot be aggregated together.
    """
    _check_bootstrap(n_resamples, confidence)
    completed = _completed(results)
    rng = np.random.default_rng(seed)
    # Resampled per-level sums of each track, shape (n_resamples, levels, stats).
    resampled = {
        track: _resampled_sums([r for r in completed if r.track == track], n_resamples, rng)
        for track in SCENE_TRACKS
    }
    sums_by_track = {key: resampled[track] for key, track in TRACK_KEYS.items()}
    sums_by_track[OVERALL] = np.sum([resampled[track] for track in SCENE_TRACKS], axis=0)
    # NaN marks a resample in which a cell has no episode.
    values = {track: metrics_from_sums(sums) for track, sums in sums_by_track.items()}
    low_q, high_q = 50 * (1 - confidence), 50 * (1 + confidence)
    point = score_json(completed)

    def intervals(samples: npt.NDArray[np.float64]) -> dict[str, Interval]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            low, high = np.nanpercentile(samples, [low_q, high_q], axis=0)
        return {m: (float(low[i]), float(high[i])) for i, m in enumerate(METRICS)}

    levels: dict[str, IntervalTable] = {}
    for i, level in enumerate(LEVEL_KEYS):
        levels[level] = {
            track: None if point["levels"][level][track] is None else intervals(values[track][:, i])
            for track in TRACKS
        }
    overall: IntervalTable = {
        track: None
        if point["overall"][track] is None
        else intervals(np.mean(values[track], axis=1))
        for track in TRACKS
    }
    return {"levels": levels, "overall": overall}


@dataclass(frozen=True, eq=False)
class SceneSums:
    """A model's episodes as a bootstrap over scenes sums them (``scene_sums``).

    Attributes:
        scenes: ``(track, scene id)`` of each row of ``sums``, sorted.
        sums: Shape (scenes, levels, 6): per scene and level, the completed episodes (0 or 1,
            up to K with K repeats), the sums of their TSR, FCR and PCR, their improving steps
            and their steps.
        by_repeat: Shape (scenes, K, levels, 6), the same per repeat, when the model has
            K > 1 repeats (``sums`` is their sum over repeats); None with one.
    """

    scenes: tuple[tuple[str, str], ...]
    sums: npt.NDArray[np.float64]
    by_repeat: npt.NDArray[np.float64] | None = None


def scene_sums(results: Iterable[EpisodeResult]) -> SceneSums:
    """Return a model's completed episodes as per-scene statistics (``SceneSums``).

    Raises:
        ValueError: If the episodes cannot be aggregated together.
    """
    completed = _completed(results)
    scenes = sorted({(r.track, r.scene_id) for r in completed})
    row = {scene: i for i, scene in enumerate(scenes)}
    repeats = 1 + max((r.repeat for r in completed), default=0)
    per_repeat = np.zeros((len(scenes), repeats, len(LEVELS), 6))
    for result in completed:
        per_repeat[row[(result.track, result.scene_id)], result.repeat, result.level] = (
            _episode_stats(result)
        )
    return SceneSums(tuple(scenes), per_repeat.sum(axis=1), per_repeat if repeats > 1 else None)


def rank_intervals(
    rows: Mapping[RowKey, SceneSums],
    *,
    table: str = OVERALL,
    fixed: Mapping[RowKey, float] | None = None,
    competitors: Collection[RowKey] | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict[RowKey, RankInterval | None]:
    """Return each row's rank interval: the ranks it takes across one joint scene bootstrap.

    Each resample draws the scenes once, with replacement within their track as
    ``bootstrap_ci`` does, from every scene any row has; every row is scored on that same
    draw, so two models that did alike on the same scenes move together and an easy draw
    lifts them all. A row with several repeats (``SceneSums.by_repeat``) then draws, for each
    drawn scene, its repeats with replacement (``bootstrap_ci``'s second stage), so its ranks
    carry its repeat-to-repeat variance as well. A row's score in a resample is the AVG of the
    table's Overall column: that level's (``table`` a level key) or the mean over the four
    levels (``OVERALL``, as ``overall_table``). Its rank is 1 plus the number of competitors
    other than itself that score strictly higher (equal scores share the better rank, as on
    the board), so a row that does not compete (a reference row) gets the rank it would take
    among them.

    The interval is ``(low, high)``: the ``(1 - confidence) / 2`` quantile of the row's
    resampled ranks rounded to the rank at or below it, and the ``(1 + confidence) / 2``
    quantile rounded to the rank at or above it, so it is never narrower than the central
    ``confidence`` share of the ranks. A resample in which a row has no episode in the table
    (possible only with missing or errored episodes) is left out of that row's ranks, and the
    row never outranks anyone there.

    Args:
        rows: Per-scene statistics of each evaluated row (``scene_sums``).
        table: ``OVERALL`` or a level key, ``"0"`` to ``"3"``.
        fixed: Rows without episodes (the paper's, which publish only their tables): their
            score is the same in every resample. They compete but get no interval.
        competitors: The rows that take ranks (keys of ``rows`` or ``fixed``); every row when
            None.
        n_resamples: Number of bootstrap resamples.
        seed: Seed of the random generator; the same seed gives the same intervals.
        confidence: Coverage of the interval, in (0, 1).

    Returns:
        Each key of ``rows`` -> its interval, or None when the row has no score in the table
        (no completed episode at that level, or at one of the four for ``OVERALL``).

    Raises:
        ValueError: If ``n_resamples`` < 1, ``confidence`` is outside (0, 1), or ``table``
            is not one of ``OVERALL`` and the level keys.
    """
    _check_bootstrap(n_resamples, confidence)
    if table != OVERALL and table not in LEVEL_KEYS:
        raise ValueError(f"table must be {OVERALL!r} or one of {LEVEL_KEYS}, got {table!r}")
    fixed = dict(fixed or {})
    keys = list(rows)
    # Every scene any row has, by track: the one draw all rows share.
    scenes = {
        track: sorted({s for r in rows.values() for t, s in r.scenes if t == track})
        for track in SCENE_TRACKS
    }
    index = {(t, s): i for i, (t, s) in enumerate((t, s) for t in SCENE_TRACKS for s in scenes[t])}
    rng = np.random.default_rng(seed)
    counts = np.zeros((n_resamples, len(index)))
    start = 0
    for track in SCENE_TRACKS:
        n = len(scenes[track])
        if n:
            # How many times each scene is drawn in each resample: n draws with replacement.
            counts[:, start : start + n] = rng.multinomial(n, np.full(n, 1 / n), size=n_resamples)
        start += n
    avg = METRICS.index(AVG)
    scores = np.empty((len(keys) + len(fixed), n_resamples))
    present: list[bool] = []
    for i, key in enumerate(keys):
        by_repeat = rows[key].by_repeat
        repeats = 1 if by_repeat is None else by_repeat.shape[1]
        aligned = np.zeros((len(index), repeats, len(LEVELS), 6))
        for j, scene in enumerate(rows[key].scenes):
            aligned[index[scene]] = rows[key].sums[j] if by_repeat is None else by_repeat[j]
        episodes = aligned[..., _EPISODES].sum(axis=(0, 1))
        resampled = _weighted_sums(counts, aligned, rng)
        values = metrics_from_sums(resampled)[..., avg]
        if table == OVERALL:
            present.append(bool(np.all(episodes > 0)))
            scores[i] = values.mean(axis=1)
        else:
            present.append(bool(episodes[int(table)] > 0))
            scores[i] = values[:, int(table)]
    for i, value in enumerate(fixed.values(), start=len(keys)):
        scores[i] = value
    # Rows built from the same episodes must tie exactly, whatever order the sums took.
    scores = np.round(scores, 12)
    everyone = [*keys, *fixed]
    competing = np.array([competitors is None or key in competitors for key in everyone])
    low_q, high_q = (1 - confidence) / 2, (1 + confidence) / 2
    intervals: dict[RowKey, RankInterval | None] = {}
    for i, key in enumerate(keys):
        if not present[i]:
            intervals[key] = None
            continue
        others = competing.copy()
        others[i] = False
        with np.errstate(invalid="ignore"):
            above = (scores[others] > scores[i]).sum(axis=0)
        ranks = (1 + above)[~np.isnan(scores[i])]
        if not len(ranks):
            intervals[key] = None
            continue
        low = np.quantile(ranks, low_q, method="lower")
        high = np.quantile(ranks, high_q, method="higher")
        intervals[key] = (int(low), int(high))
    return intervals


def tied_with_above(spans: Sequence[RankInterval | None]) -> list[bool]:
    """Return, for rows in rank order, whether each is statistically tied with the row above.

    A row is tied when its span of ranks (its rank interval, or ``(rank, rank)`` for a row
    with a rank and no interval) overlaps the span of the nearest row above it that has one.
    A row without a span is never tied, and is passed over as the row above.
    """
    tied: list[bool] = []
    above: RankInterval | None = None
    for span in spans:
        tied.append(
            span is not None and above is not None and span[0] <= above[1] and above[0] <= span[1]
        )
        if span is not None:
            above = span
    return tied


@dataclass(frozen=True)
class RepeatSpread:
    """How a model's repeats of the same episodes differ (``repeat_spread``).

    Attributes:
        repeats: The repeats with a completed episode in the table.
        low: Per metric, the lowest score of one repeat (the table's Overall column).
        high: Per metric, the highest.
        sd: Per metric, the sample standard deviation over the repeats (n - 1).
        paired: (scene, level) episodes completed in at least two repeats.
        flipped: Of those, the ones whose success differs between repeats.
    """

    repeats: int
    low: TrackScores
    high: TrackScores
    sd: TrackScores
    paired: int
    flipped: int

    @property
    def flip_rate(self) -> float | None:
        """The share of paired episodes that flipped; None when none is paired."""
        return self.flipped / self.paired if self.paired else None

    def as_dict(self) -> dict[str, object]:
        """Return the spread as JSON (``mirrorbench score --json``'s ``repeats``)."""
        return {
            "repeats": self.repeats,
            "low": self.low,
            "high": self.high,
            "sd": self.sd,
            "paired": self.paired,
            "flipped": self.flipped,
            "flip_rate": self.flip_rate,
        }


def repeat_spread(results: Iterable[EpisodeResult], table: str = OVERALL) -> RepeatSpread | None:
    """Return how a model's repeats differ in ``table`` (``OVERALL`` or a level key).

    Each repeat is scored on its own, as a run of its episodes alone (``score_json``); the
    spread is over those scores of the table's Overall column, metric by metric. The flip rate
    counts the (scene, level) episodes of the table completed in two repeats or more whose
    success (TSR) is not the same in all of them.

    Returns:
        None when fewer than two repeats have a score in the table.

    Raises:
        ValueError: If ``table`` is not one of ``OVERALL`` and the level keys, or the episodes
            cannot be aggregated together.
    """
    if table != OVERALL and table not in LEVEL_KEYS:
        raise ValueError(f"table must be {OVERALL!r} or one of {LEVEL_KEYS}, got {table!r}")
    completed = _completed(results)
    by_repeat: dict[int, list[EpisodeResult]] = {}
    for result in completed:
        by_repeat.setdefault(result.repeat, []).append(result)
    cells = []
    for repeat in sorted(by_repeat):
        scores = score_json(by_repeat[repeat])
        cell = (scores["overall"] if table == OVERALL else scores["levels"][table])[OVERALL]
        if cell is not None:
            cells.append(cell)
    if len(cells) < 2:
        return None
    successes: dict[tuple[str, int], set[bool]] = {}
    played: dict[tuple[str, int], int] = {}
    for result in completed:
        if table != OVERALL and result.level != int(table):
            continue
        key = (result.scene_id, result.level)
        successes.setdefault(key, set()).add(episode_score(result.distances).tsr == 1.0)
        played[key] = played.get(key, 0) + 1
    paired = [key for key, n in played.items() if n >= 2]
    return RepeatSpread(
        repeats=len(cells),
        low={m: min(c[m] for c in cells) for m in METRICS},
        high={m: max(c[m] for c in cells) for m in METRICS},
        sd={m: float(np.std([c[m] for c in cells], ddof=1)) for m in METRICS},
        paired=len(paired),
        flipped=sum(len(successes[key]) > 1 for key in paired),
    )


# Per-scene, per-level statistics the bootstrap sums: episodes, then the sums of TSR, FCR and
# PCR, then improving steps and steps.
_EPISODES, _TSR, _FCR, _PCR, _IMPROVING, _STEPS = range(6)


def _resampled_sums(
    results: Sequence[EpisodeResult], n_resamples: int, rng: np.random.Generator
) -> npt.NDArray[np.float64]:
    """Return each resample's per-level statistic sums, shape (n_resamples, levels, stats).

    Scenes are drawn with replacement; with several repeats, each drawn scene then draws its
    repeats with replacement too (``_repeat_weights``). All sums are zero when there is no
    episode to resample.
    """
    scene_ids = sorted({r.scene_id for r in results})
    if not scene_ids:
        return np.zeros((n_resamples, len(LEVELS), 6))
    row = {scene_id: i for i, scene_id in enumerate(scene_ids)}
    repeats = 1 + max(r.repeat for r in results)
    per_repeat = np.zeros((len(scene_ids), repeats, len(LEVELS), 6))
    for result in results:
        per_repeat[row[result.scene_id], result.repeat, result.level] = _episode_stats(result)
    n = len(scene_ids)
    # How many times each scene is drawn in each resample: n draws with replacement.
    counts = rng.multinomial(n, np.full(n, 1 / n), size=n_resamples).astype(np.float64)
    return _weighted_sums(counts, per_repeat, rng)


def _episode_stats(result: EpisodeResult) -> tuple[float, ...]:
    score = episode_score(result.distances)
    return (1, score.tsr, score.fcr, score.pcr, score.improving_steps, score.steps)


def _repeat_weights(
    counts: npt.NDArray[np.float64], repeats: int, rng: np.random.Generator
) -> npt.NDArray[np.float64]:
    """Return the weight of each scene's each repeat in each resample, (resamples, scenes, K).

    The second stage of the two-stage bootstrap: every time a scene is drawn, ``repeats``
    repeats of it are drawn with replacement and averaged. A scene drawn ``c`` times thus
    makes ``c * K`` draws among its K repeats (one multinomial), each worth ``1 / K``: its
    weights sum to ``c``, as a scene's single repeat would weigh without repeats.
    """
    draws = (counts * repeats).astype(np.int64)
    return rng.multinomial(draws, np.full(repeats, 1 / repeats)) / repeats


def _weighted_sums(
    counts: npt.NDArray[np.float64],
    per_repeat: npt.NDArray[np.float64],
    rng: np.random.Generator,
) -> npt.NDArray[np.float64]:
    """Return the resampled statistic sums (resamples, levels, 6) of per-scene, per-repeat
    statistics (scenes, K, levels, 6) under scene ``counts`` (resamples, scenes).

    With one repeat the counts weigh the scenes as they are, drawing nothing more from ``rng``;
    with several, each drawn scene draws its repeats too (``_repeat_weights``).
    """
    scenes, repeats = per_repeat.shape[:2]
    n_resamples = counts.shape[0]
    if repeats == 1:
        sums = counts @ per_repeat.reshape(scenes, -1)
    else:
        weights = _repeat_weights(counts, repeats, rng).reshape(n_resamples, -1)
        sums = weights @ per_repeat.reshape(scenes * repeats, -1)
    return sums.reshape(n_resamples, len(LEVELS), 6)


def metrics_from_sums(sums: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Return the metrics (``METRICS`` order, last axis) of statistic sums (last axis).

    A cell with no episode has NaN for every metric.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        episodes = np.where(sums[..., _EPISODES] > 0, sums[..., _EPISODES], np.nan)
        steps = sums[..., _STEPS]
        sir = np.where(steps > 0, sums[..., _IMPROVING] / np.where(steps > 0, steps, 1), 0.0)
        tsr = sums[..., _TSR] / episodes
        fcr = sums[..., _FCR] / episodes
        pcr = sums[..., _PCR] / episodes
        # A cell with no episode has no SIR either.
        sir = np.where(np.isnan(episodes), np.nan, sir)
    avg = (tsr + sir + fcr + pcr) / 4
    return np.stack([tsr, sir, fcr, pcr, avg], axis=-1)


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


def _sign(a: _Ratio, b: _Ratio) -> int:
    """The sign of ``a - b``, exactly (denominators are positive)."""
    difference = a.numerator * b.denominator - b.numerator * a.denominator
    return (difference > 0) - (difference < 0)
