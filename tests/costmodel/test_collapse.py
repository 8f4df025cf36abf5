"""The acceptance-collapse rule, with hand-worked lines: near 1.0 is at or under 1.2; below half is under
0.5 x the drafter's expected accept length; recovery is above the higher line by 5 %."""

import pytest

from specdash.costmodel.collapse import check_acceptance, collapse_line


@pytest.mark.parametrize(
    "reference,line",
    [(None, 1.2), (2.0, 1.2), (2.4, 1.2), (2.9, 1.45), (3.5, 1.75)],  # max(1.2, half the reference)
)
def test_the_collapse_line(reference, line):
    assert collapse_line(reference) == pytest.approx(line)


@pytest.mark.parametrize(
    "accept_length,reference,collapsed,cause",
    [
        (1.05, 2.4, True, "near one"),  # 0.05 drafted tokens kept a round
        (1.2, None, True, "near one"),  # at the line counts
        (1.21, None, False, None),
        (1.31, 2.9, True, "below half"),  # half of 2.9 is 1.45
        (1.45, 2.9, False, None),  # at half is not below it
        (1.1, 2.9, True, "near one"),  # both lines: the plainer reason
        (2.3, 2.4, False, None),
    ],
)
def test_a_first_window(accept_length, reference, collapsed, cause):
    check = check_acceptance(accept_length, reference, "history")
    assert (check.collapsed, check.cause, check.is_alert) == (collapsed, cause, collapsed)
    assert check.change == ("collapsed" if collapsed else "steady")


def test_recovery_needs_the_line_plus_five_percent():
    # line 1.2 without a reference: recovered above 1.2 x 1.05 = 1.26
    assert check_acceptance(1.25, was_collapsed=True).change == "still collapsed"
    assert check_acceptance(1.27, was_collapsed=True).change == "recovered"
    # line 1.45 with a reference of 2.9: recovered above 1.5225
    assert check_acceptance(1.52, 2.9, "training", was_collapsed=True).collapsed
    assert not check_acceptance(1.53, 2.9, "training", was_collapsed=True).collapsed
    assert check_acceptance(1.52, 2.9, "training", was_collapsed=True).cause == "below half"


def test_the_verdicts_read_aloud():
    collapsed = check_acceptance(1.05, 2.4, "history")
    assert collapsed.text == (
        "Acceptance collapsed: accept length 1.05 is near 1.0: the target rejects almost every drafted token "
        "(0.05 kept per round), so each round pays a verify forward and drafting for about one token; 2.40 "
        "expected from its earlier benchmarks here. Check the server's speculative settings."
    )
    half = check_acceptance(1.31, 2.9, "training")
    assert half.text == (
        "Acceptance collapsed: accept length 1.31 is below half of the 2.90 expected from its training "
        "accuracies (collapse line 1.45). Check the server's speculative settings."
    )
    recovered = check_acceptance(2.3, 2.4, "history", was_collapsed=True)
    assert recovered.text == (
        "Acceptance recovered: accept length 2.30, back above the collapse line 1.20 (2.40 expected from its "
        "earlier benchmarks here)."
    )
    assert check_acceptance(2.3).text == (
        "Acceptance holds: accept length 2.30, above the collapse line 1.20 (nothing predicts this drafter's "
        "accept length here)."
    )


def test_the_collapse_scenario_alerts_once_and_recovers():
    # vllm_collapse.prom's windows: 1 + accepted / 4800 rounds for 6720, 240, 96, 6240 accepted
    state, changes = False, []
    for accept_length in (1 + 6720 / 4800, 1 + 240 / 4800, 1 + 96 / 4800, 1 + 6240 / 4800):
        check = check_acceptance(accept_length, 2.4, "history", was_collapsed=state)
        state = check.collapsed
        changes.append(check.change)
    assert changes == ["steady", "collapsed", "still collapsed", "recovered"]


@pytest.mark.parametrize("bad", [0.9, float("nan"), float("inf")])
def test_an_accept_length_under_one_is_refused(bad):
    with pytest.raises(ValueError, match="not an accept length"):
        check_acceptance(bad)
    with pytest.raises(ValueError, match="reference"):
        check_acceptance(2.0, reference=bad)
