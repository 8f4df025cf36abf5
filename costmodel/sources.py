"""Which numbers a prediction rests on, each order decided here once: the no-speculation baseline
(measured -> interpolated between measured loads -> the profile's) and the accept length (the drafter's
training rates -> its own earlier benchmarks -> the benchmarks' measured mean)."""

import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple, Protocol

from specdash.costmodel.domain import TauSource
from specdash.costmodel.load import baseline_at_load
from specdash.costmodel.priors import DeploymentFacts


def choose_baseline(
    measured_tps: float | None,
    levels: Iterable[Mapping[int, float]],
    concurrency: int,
    facts: DeploymentFacts,
    comm_fraction: float = 0.0,
    profile_tps: float | None = None,
    extrapolate: bool = True,
) -> float | None:
    """The no-speculation tok/s at this load, the first of: measured at this load (`measured_tps`);
    interpolated between the measured loads of `levels` ({concurrency: tok/s}, tried in order: a
    dataset's own levels, then all of its deployment's), or with `extrapolate` carried from the nearest
    one by the load model; the profile's `profile_tps`. None when there is none. `levels` is only read
    when nothing was measured at this load (pass a generator)."""
    if measured_tps is not None:
        return measured_tps
    for measured in levels:
        found = baseline_at_load(measured, concurrency, facts, comm_fraction)
        if found is not None and (extrapolate or found.rule != "extrapolated"):
            return found.baseline_tps
    return profile_tps


def advice_loads(measured: Mapping[int, float], profile_tps: float | None) -> list[tuple[int, float]]:
    """The loads to advise a depth at, with their baselines: every load the deployment was measured at
    without speculation, else batch 1 at the profile's baseline (none without one)."""
    loads = sorted(measured.items())
    if not loads and profile_tps:
        return [(1, profile_tps)]
    return loads


class Trained(Protocol):
    """An accept length predicted from a drafter's training rates (costmodel.acceptance.AcceptLength)."""

    @property
    def accept_length(self) -> float: ...
    @property
    def extrapolated(self) -> bool: ...
    @property
    def approximation(self) -> str | None: ...


class History(Protocol):
    """What a drafter's own earlier benchmarks lead one to expect, and the text saying which."""

    @property
    def accept_length(self) -> float: ...
    @property
    def text(self) -> str: ...


class AcceptLengthChoice(NamedTuple):
    accept_length: float
    source: str  # training | history | measured
    extrapolated: bool = False
    approximation: str | None = None
    history: str = ""  # which earlier benchmarks, for source history

    @property
    def reference(self) -> str:
        """Where the accept length came from, as a diagnosis cites it ("" for a measured one)."""
        if self.source == TauSource.TRAINING:
            return training_reference(self.accept_length)
        return self.history


def training_reference(accept_length: float) -> str:
    """An accept length from training rates, as a diagnosis cites it."""
    return f"tau {accept_length:.2f} from its training acc_i"


def choose_accept_length(
    trained: Trained | None, history: History | None, measured: Sequence[float]
) -> AcceptLengthChoice | None:
    """The accept length a prediction uses, the first of: the one the drafter's training rates give
    (`trained`); the drafter's own earlier benchmarks (`history`); the mean of the measured ones. None
    when there is none of them."""
    if trained is not None:
        return AcceptLengthChoice(
            trained.accept_length, TauSource.TRAINING, trained.extrapolated, trained.approximation
        )
    if history is not None:
        return AcceptLengthChoice(history.accept_length, TauSource.HISTORY, history=history.text)
    if measured:
        return AcceptLengthChoice(statistics.fmean(measured), TauSource.MEASURED)
    return None
