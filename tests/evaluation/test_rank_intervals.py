"""Rank intervals from one joint bootstrap over scenes, and the ties they make, checked against
hand computations on two scenes (``evaluation.metrics.rank_intervals``, ``tied_with_above``).

Two Human scenes give three kinds of resample: both draws of the first scene (probability 1/4),
both of the second (1/4), or one of each (1/2). The episodes below make each kind's ranks easy
to work out by hand:

- ``[3, 2, 1]`` succeeds: TSR, SIR, FCR, PCR all 1, AVG 1.
- ``[3, 4]`` moves away: TSR 0, SIR 0, FCR 1 - 3/2 = -0.5, PCR 0: AVG -0.125.
- ``[3, 2]`` moves closer once: TSR 0, SIR 1, FCR 0.5, PCR 0.5: AVG 0.5.
"""

from __future__ import annotations

import pytest

from evaluation.metrics import (
    EpisodeResult,
    rank_intervals,
    scene_sums,
    tied_with_above,
)
from evaluation.vocabulary import LEVELS, OVERALL

SUCCESS, AWAY, CLOSER = (3, 2, 1), (3, 4), (3, 2)


def episodes(first, second, levels=(0,)):
    """A model's episodes: ``first`` on scene h1, ``second`` on h2, at each of ``levels``."""
    return scene_sums(
        [
            EpisodeResult(scene, "Human", level, distances)
            for level in levels
            for scene, distances in (("h1", first), ("h2", second))
        ]
    )


def test_a_published_row_between_two_evaluated_ones_spreads_their_ranks_as_by_hand():
    # A wins on h1, B on h2; the paper's row C stands at 0.5 in every resample.
    # h1 h1: A 1 > C 0.5 > B -0.125: A 1st, B 3rd. h2 h2: B 1st, A 3rd.
    # h1 h2: A and B pool the same episodes: TSR 1/2, SIR 2/3 (2 improving steps of 3),
    #   FCR 1/4, PCR 1/2, AVG 0.479 < 0.5: C 1st, A and B share 2nd.
    # So A and B each rank 1st, 2nd, 3rd with probabilities 1/4, 1/2, 1/4.
    rows = {"A": episodes(SUCCESS, AWAY), "B": episodes(AWAY, SUCCESS)}
    fixed = {"C": 0.5}

    wide = rank_intervals(rows, table="0", fixed=fixed, n_resamples=4000)
    # 2.5% of the ranks are 1st, 97.5% are at most 3rd.
    assert wide == {"A": (1, 3), "B": (1, 3)}
    # The 30% and 70% quantiles both fall among the 2nds (cumulative 1/4 and 3/4).
    narrow = rank_intervals(rows, table="0", fixed=fixed, n_resamples=4000, confidence=0.4)
    assert narrow == {"A": (2, 2), "B": (2, 2)}
    # The published row has no episodes to resample: it gets no interval of its own.
    assert "C" not in wide


def test_every_row_is_scored_on_the_same_draw_of_scenes():
    # B did as well as A on h1 and better on h2: on any one draw of scenes, B is never below A.
    # Resampled apart, A would beat B whenever A's draw held more h1 than B's.
    a, b = episodes(SUCCESS, AWAY), episodes(SUCCESS, CLOSER)
    intervals = rank_intervals({"A": a, "B": b}, table="0", n_resamples=2000)
    # h1 h1: both AVG 1, sharing 1st (probability 1/4); otherwise B 1st and A 2nd.
    assert intervals == {"A": (1, 2), "B": (1, 1)}
    # Two rows built from the same episodes tie in every resample: both always 1st.
    same = rank_intervals({"A": a, "A again": episodes(SUCCESS, AWAY)}, table="0")
    assert same == {"A": (1, 1), "A again": (1, 1)}


def test_a_reference_row_gets_the_ranks_it_would_take_among_the_competitors():
    rows = {"A": episodes(SUCCESS, AWAY), "baseline": episodes(AWAY, SUCCESS)}
    intervals = rank_intervals(
        rows, table="0", fixed={"C": 0.5}, competitors={"A", "C"}, n_resamples=4000
    )
    # The baseline takes the ranks it took when it competed (1st, 2nd or 3rd); A no longer
    # counts it: 1st on h1 h1, else 2nd behind C.
    assert intervals == {"A": (1, 2), "baseline": (1, 3)}
    alone = rank_intervals(rows, table="0", competitors={"A"}, n_resamples=4000)
    # Against A alone: A 1st whatever the baseline does; the baseline 1st or 2nd.
    assert alone == {"A": (1, 1), "baseline": (1, 2)}


def test_the_overall_table_ranks_the_mean_over_the_levels():
    every_level = {
        "A": episodes(SUCCESS, AWAY, levels=LEVELS),
        "B": episodes(AWAY, SUCCESS, levels=LEVELS),
    }
    # The same episodes at every level: the overall AVG is each level's, the ranks those of
    # one level.
    overall = rank_intervals(every_level, table=OVERALL, fixed={"C": 0.5}, n_resamples=4000)
    assert overall == {"A": (1, 3), "B": (1, 3)}
    # A row without a level has no overall score, and no interval; it still has level 0's.
    partial = {"A": episodes(SUCCESS, AWAY, levels=(0, 1, 2)), "B": every_level["B"]}
    assert rank_intervals(partial, table=OVERALL)["A"] is None
    assert rank_intervals(partial, table="0")["A"] == (1, 2)
    assert rank_intervals(partial, table="3")["A"] is None


def test_the_same_seed_gives_the_same_intervals_and_the_row_order_does_not_matter():
    rows = {"A": episodes(SUCCESS, AWAY), "B": episodes(AWAY, CLOSER)}
    first = rank_intervals(rows, table="0", fixed={"C": 0.2}, seed=7, n_resamples=300)
    again = rank_intervals(
        dict(reversed(rows.items())), table="0", fixed={"C": 0.2}, seed=7, n_resamples=300
    )
    assert first == again


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"table": "4"}, "table must be"),
        ({"n_resamples": 0}, "n_resamples"),
        ({"confidence": 1.0}, "confidence"),
    ],
)
def test_bad_arguments_are_refused_naming_them(arguments, message):
    with pytest.raises(ValueError, match=message):
        rank_intervals({"A": episodes(SUCCESS, AWAY)}, **arguments)


def test_a_row_is_tied_when_its_ranks_overlap_those_of_the_nearest_row_above_with_ranks():
    spans = [(1, 2), None, (2, 3), (5, 5), (5, 6), (8, 9), (9, 9)]
    # (2, 3) overlaps (1, 2) across the row without ranks; (5, 5) is clear of (2, 3);
    # (5, 6) shares 5; (8, 9) is clear of (5, 6); (9, 9) shares 9.
    assert tied_with_above(spans) == [False, False, True, False, True, False, True]
    assert tied_with_above([]) == []
