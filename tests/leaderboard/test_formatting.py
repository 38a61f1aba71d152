import math

from leaderboard.formatting import interval, metric, params, score_cell


def test_metrics_show_three_decimals_and_a_dash_when_absent():
    assert metric(0.4416) == "0.442"
    assert metric(-1.2) == "-1.200"
    assert metric(None) == metric(math.nan) == "\u2014"


def test_parameter_counts_are_shown_in_billions():
    assert params(72.0) == "72B"
    assert params(0.5) == "0.5B"
    assert params(None) == "\u2014"


def test_intervals_read_as_a_sentence():
    assert interval([0.1, 0.25], 264) == "95% CI 0.100 to 0.250 over 264 episodes"
    assert interval(None) == ""


def test_score_cells_carry_their_mark_and_interval():
    assert score_cell(0.5, mark="first", ci=[0.4, 0.6], episodes=66, group_start=True) == (
        '<td class="num first group-start" title="95% CI 0.400 to 0.600 over 66 episodes">'
        "<strong>0.500</strong></td>"
    )
    assert score_cell(0.25, mark="second") == '<td class="num second"><u>0.250</u></td>'
    assert score_cell(None) == '<td class="num">\u2014</td>'
