"""A checkpoint's per-position acceptance: as stored, from the training accuracies (train/acc_i) it is
read from, and as its benchmarks imply it. The one reader of each, for the refresh, calibration, the
depth advisor, the pages and export."""

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from specdash.costmodel.accuracies import ACCURACY_PREFIX, accuracy_position, rates_from_accuracies
from specdash.costmodel.domain import Setting
from specdash.costmodel.measured import conditional_from_measured
from specdash.db.bulk import select_in
from specdash.db.models import Benchmark, Checkpoint, MetricKey, MetricPoint, PositionAcceptance


class StoredAcceptance(NamedTuple):
    rates: tuple[float, ...]  # conditional acceptance at draft positions 0, 1, ...
    source: str  # what set them: "training" (acc_i) today


# built once: the Checkpoints page reads it on every render
_STORED_RATES = select(
    PositionAcceptance.checkpoint_id, PositionAcceptance.rate, PositionAcceptance.source
).order_by(PositionAcceptance.checkpoint_id, PositionAcceptance.position)


def checkpoint_acceptance(
    session: Session, checkpoint_ids: Sequence[int] | None
) -> dict[int, StoredAcceptance]:
    """The stored acceptance of these checkpoints (every checkpoint's when None); checkpoints without any
    are left out."""
    rates: dict[int, list[float]] = defaultdict(list)
    sources: dict[int, str] = {}
    for checkpoint_id, rate, source in select_in(
        session, _STORED_RATES, PositionAcceptance.checkpoint_id, checkpoint_ids
    ):
        rates[checkpoint_id].append(rate)
        sources.setdefault(checkpoint_id, source)
    return {key: StoredAcceptance(tuple(value), sources[key]) for key, value in rates.items()}


def checkpoint_rates(session: Session, checkpoint_ids: Sequence[int] | None) -> dict[int, tuple[float, ...]]:
    """The stored conditional acceptance per position of these checkpoints (all when None)."""
    return {key: stored.rates for key, stored in checkpoint_acceptance(session, checkpoint_ids).items()}


def latest_checkpoint_rates(session: Session, run_id: int) -> list[float]:
    """The acceptance of the run's latest checkpoint that has one (highest step, else newest)."""
    query = (
        select(PositionAcceptance.checkpoint_id, PositionAcceptance.rate)
        .join(Checkpoint, PositionAcceptance.checkpoint_id == Checkpoint.id)
        .where(Checkpoint.run_id == run_id)
        .order_by(Checkpoint.step.desc().nulls_last(), Checkpoint.id.desc(), PositionAcceptance.position)
    )
    rates: list[float] = []
    latest = None
    for checkpoint_id, rate in session.execute(query):
        if latest is not None and checkpoint_id != latest:
            break
        latest = checkpoint_id
        rates.append(rate)
    return rates


def accuracy_keys(session: Session) -> dict[int, int]:
    """The stored metric keys that are training accuracies: key id -> draft position."""
    pattern = ACCURACY_PREFIX.replace("_", "\\_") + "%"
    return {
        key_id: position
        for key_id, name in session.execute(
            select(MetricKey.id, MetricKey.name).where(MetricKey.name.like(pattern, escape="\\"))
        )
        if (position := accuracy_position(name)) is not None
    }


def last_accuracies(session: Session, run_ids: list[int]) -> dict[int, tuple[list[float], int]]:
    """Per run: its acceptance curve from the accuracies as last logged (rates_from_accuracies) and the
    last step train/acc_0 was logged at; runs without one are left out."""
    keys = accuracy_keys(session)
    if not keys or not run_ids:
        return {}
    last = (
        select(MetricPoint.run_id, MetricPoint.key_id, func.max(MetricPoint.step).label("step"))
        .where(MetricPoint.run_id.in_(run_ids), MetricPoint.key_id.in_(keys))
        .group_by(MetricPoint.run_id, MetricPoint.key_id)
        .subquery()
    )
    found: dict[int, dict[int, tuple[float, int]]] = defaultdict(dict)
    for run_id, key_id, value, step in session.execute(
        select(MetricPoint.run_id, MetricPoint.key_id, MetricPoint.value, MetricPoint.step).join(
            last,
            (MetricPoint.run_id == last.c.run_id)
            & (MetricPoint.key_id == last.c.key_id)
            & (MetricPoint.step == last.c.step),
        )
    ):
        found[run_id][keys[key_id]] = (value, step)
    curves = {}
    for run_id, positions in found.items():
        rates = rates_from_accuracies({position: value for position, (value, _) in positions.items()})
        if rates:
            curves[run_id] = (rates, positions[0][1])
    return curves


def accuracies_at(session: Session, run_id: int, step: int) -> list[float]:
    """The run's acceptance curve from the accuracies logged at the last step <= `step`, position by position."""
    keys = accuracy_keys(session)
    if not keys:
        return []
    last = (
        select(MetricPoint.key_id, func.max(MetricPoint.step).label("step"))
        .where(MetricPoint.run_id == run_id, MetricPoint.step <= step, MetricPoint.key_id.in_(keys))
        .group_by(MetricPoint.key_id)
        .subquery()
    )
    found = {
        keys[key_id]: value
        for key_id, value in session.execute(
            select(MetricPoint.key_id, MetricPoint.value)
            .join(last, (MetricPoint.key_id == last.c.key_id) & (MetricPoint.step == last.c.step))
            .where(MetricPoint.run_id == run_id)
        )
    }
    return rates_from_accuracies(found)


@dataclass(frozen=True)
class MeasuredAcceptance:
    """A checkpoint's per-position acceptance derived from its benchmarks (no training metrics needed)."""

    rates: tuple[float, ...]
    source: str  # survival | accept_length | none
    accept_lengths: dict[int, float]  # chain depth K -> mean measured tau
    benchmarks: int
    datasets: tuple[str, ...]

    @property
    def depth(self) -> int:
        """The deepest position the benchmarks measured; deeper ones are extrapolated."""
        return len(self.rates)


def measured_acceptance(
    session: Session, checkpoint_id: int, dataset: str | None = None
) -> MeasuredAcceptance:
    """Conditional acceptance per position from the checkpoint's benchmarks (superseded ones left out, one
    dataset or all): vLLM's per-position survival rates averaged per position when any benchmark has them,
    else the mean measured accept length of chain speculation at each depth K."""
    query = select(
        Benchmark.num_steps,
        Benchmark.topk,
        Benchmark.accept_length,
        Benchmark.position_survival,
        Benchmark.dataset,
    ).where(
        Benchmark.checkpoint_id == checkpoint_id,
        Benchmark.speculative_algorithm.is_not(None),
        Benchmark.superseded_by_id.is_(None),
        *((Benchmark.dataset == dataset,) if dataset is not None else ()),
    )
    taus: dict[int, list[float]] = {}
    survival: dict[int, list[float]] = {}
    used, datasets = 0, set()
    for steps, topk, tau, positions, name in session.execute(query):
        counted = False
        if positions:
            for i, value in enumerate(positions):
                survival.setdefault(i, []).append(float(value))
            counted = True
        if steps and Setting(None, steps, topk).is_chain and tau is not None and tau >= 1:
            taus.setdefault(int(steps), []).append(float(tau))
            counted = True
        if counted:
            used += 1
            datasets.add(name or "")
    accept_lengths = {k: sum(v) / len(v) for k, v in sorted(taus.items())}
    mean_survival = [sum(survival[i]) / len(survival[i]) for i in sorted(survival)]
    rates, source = conditional_from_measured(mean_survival, accept_lengths)
    return MeasuredAcceptance(tuple(rates), source, accept_lengths, used, tuple(sorted(datasets)))
