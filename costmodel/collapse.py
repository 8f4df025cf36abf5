"""The acceptance-collapse rule of a live deployment: whether a window's accept length has collapsed or
recovered, against what the drafter should do, and the verdict a person reads aloud.

A collapse is acceptance falling apart (a wrong --speculative-algorithm, a drafter for another target, a
draft-length schedule gone to zero), not a drafter that is merely weaker than predicted: the ordinary
gap verdict covers that. Two lines mark it:
- near 1.0: at an accept length of NEAR_ONE = 1.2 a round keeps 0.2 drafted tokens. Published rounds
  cost a median of about 1.3 baseline steps (a verify forward plus drafting; Spec-Bench's Medusa runs
  rounds of 1.30 steps, see costmodel/priors.py), so at 1.2 or below speculation decodes slower than no
  speculation on a typical deployment (break-even tau = T_round / T_base ~ 1.3): the drafter contributes
  nothing. The line sits under 1.3 so that a weak but working drafter (1.3-1.5) is left to the ordinary
  verdict and to the second line;
- below REFERENCE_SHARE = half of the accept length the drafter should reach (from its training
  accuracies, or its own history on this deployment): a drafter that keeps less than half of its tokens
  beyond the bonus is not serving the drafter that was trained.
Recovery needs the accept length back above both lines by RECOVERY_MARGIN (5 %, the tolerance within
which specdash calls accept lengths equal), so a window hovering at a line does not flap."""

import math
from dataclasses import dataclass
from typing import Literal

NEAR_ONE = 1.2
REFERENCE_SHARE = 0.5
RECOVERY_MARGIN = 0.05
# The leading code of a collapse's alert (what a mute matches); its severity is always critical.
COLLAPSE_CODE = "acceptance_collapse"
COLLAPSE_SEVERITY = "critical"

Change = Literal["collapsed", "still collapsed", "recovered", "steady"]
Cause = Literal["near one", "below half"]
ReferenceSource = Literal["training", "history"]


@dataclass(frozen=True)
class AcceptanceCheck:
    """One window's accept length judged against the collapse lines, and what changed since the last."""

    accept_length: float
    line: float  # below it (or at NEAR_ONE) acceptance has collapsed
    collapsed: bool
    change: Change
    cause: Cause | None  # why it counts as collapsed; None when it does not
    text: str

    @property
    def is_alert(self) -> bool:
        """The window that shows a collapse first: a critical alert, posted once."""
        return self.change == "collapsed"


def collapse_line(reference: float | None) -> float:
    """The accept length under which acceptance has collapsed: the larger of NEAR_ONE and half of the
    drafter's expected accept length."""
    return max(NEAR_ONE, REFERENCE_SHARE * reference) if reference is not None else NEAR_ONE


def check_acceptance(
    accept_length: float,
    reference: float | None = None,
    reference_source: ReferenceSource | None = None,
    was_collapsed: bool = False,
) -> AcceptanceCheck:
    """Judge one window. `reference` is the accept length the drafter should reach here (predicted from
    training, or its history), None when nothing predicts it; `was_collapsed` is the state the previous
    window left."""
    _check_accept_length("accept_length", accept_length)
    if reference is not None:
        _check_accept_length("reference", reference)
    line = collapse_line(reference)
    cause: Cause | None = None
    if accept_length <= NEAR_ONE:
        cause = "near one"
    elif reference is not None and accept_length < REFERENCE_SHARE * reference:
        cause = "below half"
    if was_collapsed:
        # back above the line, by the margin: until then it stays collapsed, for the reason of its line
        collapsed = accept_length <= line * (1 + RECOVERY_MARGIN)
        change: Change = "still collapsed" if collapsed else "recovered"
        if not collapsed:
            cause = None
        elif cause is None:
            cause = "near one" if line == NEAR_ONE else "below half"
    else:
        collapsed = cause is not None
        change = "collapsed" if collapsed else "steady"
    text = _verdict(change, accept_length, line, cause, reference, reference_source)
    return AcceptanceCheck(accept_length, line, collapsed, change, cause, text)


def _check_accept_length(name: str, value: float) -> None:
    if not math.isfinite(value) or value < 1.0:
        raise ValueError(f"{name}: {value} is not an accept length (tokens per round, at least 1)")


def _expected(reference: float | None, source: ReferenceSource | None) -> str:
    if reference is None:
        return "nothing predicts this drafter's accept length here"
    where = {"training": "its training accuracies", "history": "its earlier benchmarks here"}.get(
        source or "", "its prediction"
    )
    return f"{reference:.2f} expected from {where}"


def _verdict(
    change: Change,
    accept_length: float,
    line: float,
    cause: Cause | None,
    reference: float | None,
    source: ReferenceSource | None,
) -> str:
    expected = _expected(reference, source)
    kept = accept_length - 1.0
    if change == "steady":
        return f"Acceptance holds: accept length {accept_length:.2f}, above the collapse line {line:.2f} ({expected})."
    if change == "recovered":
        return (
            f"Acceptance recovered: accept length {accept_length:.2f}, back above the collapse line "
            f"{line:.2f} ({expected})."
        )
    if cause == "near one":
        why = (
            f"near 1.0: the target rejects almost every drafted token ({kept:.2f} kept per round), so each "
            "round pays a verify forward and drafting for about one token"
        )
    else:
        why = f"below half of the {expected} (collapse line {line:.2f})"
    lead = "Acceptance collapsed" if change == "collapsed" else "Acceptance still collapsed"
    tail = f"; {expected}" if cause == "near one" else ""
    return (
        f"{lead}: accept length {accept_length:.2f} is {why}{tail}. Check the server's speculative settings."
    )
