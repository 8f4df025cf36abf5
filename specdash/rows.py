"""The typed rows the store hands a refresh and the service layer judges: benchmarks, prediction and gap
values, stored alerts, and what one refresh reads once (RefreshContext). Plain named tuples and frozen
dataclasses over costmodel/ types, no SQL: the judging is tested on them without a database."""

from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import NamedTuple

from specdash.costmodel.calibrated import CalibratedSet, CostSet
from specdash.costmodel.domain import Setting
from specdash.costmodel.estimated import BaselineEstimate
from specdash.costmodel.loadmodel import LoadParams
from specdash.costmodel.priors import DeploymentFacts
from specdash.costmodel.sources import choose_baseline


class BenchmarkRow(NamedTuple):
    """A benchmark's columns as a refresh reads them (db/refresh_scope.BENCHMARK_COLUMNS, in order): a
    plain named tuple, whose fields read in C (a SQLAlchemy Row's by name cost ten times as much, a score
    of times a benchmark)."""

    id: int
    checkpoint_id: int
    deployment_id: int
    speculative_algorithm: str | None
    num_steps: int | None
    topk: int | None
    num_draft_tokens: int | None
    concurrency: int
    dataset: str | None
    decode_tps: float
    accept_length: float | None
    draft_hidden_size: int | None
    input_tokens: float | None = None
    output_tokens: float | None = None
    superseded_by_id: int | None = None  # a superseded benchmark's alert is not opened again


class PredictionKey(NamedTuple):
    """What one prediction covers; the benchmarks of a group share it."""

    checkpoint_id: int
    deployment_id: int
    steps: int
    topk: int
    draft_tokens: int
    concurrency: int
    dataset: str


class PredictionValues(NamedTuple):
    """A prediction's stored numbers, compared before rewriting."""

    parameter_set_id: int | None
    predicted_tps: float
    accept_length: float | None
    accept_length_source: str | None
    round_ms: float | None
    compute_ms: float | None
    comm_ms: float | None
    draft_ms: float | None
    overhead_ms: float | None
    baseline_tps: float | None
    baseline_estimated: bool | None
    extrapolated: bool | None
    approximation: str | None
    error_band: float | None


class GapValues(NamedTuple):
    """A gap's stored numbers, diagnoses as the JSON text stored."""

    gap: float
    measured_tps: float
    predicted_tps: float
    measured_round_ms: float | None
    predicted_round_ms: float | None
    acceptance_factor: float | None
    round_factor: float | None
    unexplained_ms: float | None
    diagnoses: str
    severity: str | None


class AlertValues(NamedTuple):
    """A benchmark's verdict as its alert row stores it, with the investigation's status and note."""

    gap_id: int | None
    is_alert: bool
    severity: str | None
    code: str | None
    reason: str | None
    status: str
    note: str | None


# The fields compared and written, in order: the stored columns of the same names.
PREDICTION_VALUES = PredictionValues._fields
GAP_VALUES = GapValues._fields
ALERT_VALUES = AlertValues._fields
# A prediction as the store keys it: its PredictionKey's fields and its source.
PredictionSourceKey = tuple[PredictionKey, str]
Groups = dict[PredictionKey, list[BenchmarkRow]]


def prediction_key(bench: BenchmarkRow, steps: int) -> PredictionKey:
    """The key of a benchmark row's prediction (K already resolved)."""
    setting = Setting.of(bench.speculative_algorithm, steps, bench.topk, bench.num_draft_tokens)
    return PredictionKey(
        bench.checkpoint_id,
        bench.deployment_id,
        steps,
        setting.width,
        setting.verified_tokens,  # type: ignore[arg-type]  # K is resolved: never None
        bench.concurrency,
        bench.dataset or "",
    )


@dataclass(frozen=True, slots=True)
class Drafter:
    """What a checkpoint tells the cost model: its run's identity and its trained rates."""

    speculative_algorithm: str | None
    hidden_size: int | None
    ttt_length: int | None
    run_id: int
    rates: tuple[float, ...]


class DeploymentRow(NamedTuple):
    """What judging a deployment's benchmarks reads of it besides its cost facts."""

    name: str
    baseline_tps: float | None
    gap_threshold: float | None  # None: the global threshold


class ActiveSet(NamedTuple):
    """An active parameter set as the store keeps it, read as the cost model's CostSet."""

    id: int
    deployment_id: int
    source: str  # theory | calibrated
    version: int
    costs: CostSet


class SetPlan(NamedTuple):
    """An active parameter set a deployment's predictions are made under."""

    id: int
    source: str  # theory | calibrated
    costs: CostSet
    band: float | None  # the fit's error band; None: the prior's, by accept-length source
    load: LoadParams | None = None  # a calibrated set's round of batch and depth, on the deployment's target


@dataclass(frozen=True, slots=True)
class Reference:
    """The accept length a drafter's own benchmarks lead one to expect, and which ones."""

    accept_length: float
    benchmark_ids: tuple[int, ...]
    text: str


@dataclass(frozen=True)
class Baselines:
    """Median measured no-speculation tok/s per (deployment, concurrency, dataset) and per
    (deployment, concurrency); the dataset's own baseline wins, since output lengths differ by dataset."""

    by_dataset: dict[tuple[int, int, str], float]
    by_concurrency: dict[tuple[int, int], float]

    def lookup(self, deployment_id: int, concurrency: int, dataset: str | None) -> float | None:
        own = self.by_dataset.get((deployment_id, concurrency, dataset or ""))
        return own if own is not None else self.by_concurrency.get((deployment_id, concurrency))

    def levels(self, deployment_id: int, dataset: str | None) -> Iterator[dict[int, float]]:
        """The deployment's measured load levels {concurrency: tok/s}: the dataset's own, then all of them."""
        yield dict(self._levels_by_dataset.get((deployment_id, dataset or ""), {}))
        yield self.measured_loads(deployment_id)

    def measured_loads(self, deployment_id: int) -> dict[int, float]:
        """Every load the deployment was measured at without speculation: {concurrency: tok/s}."""
        return dict(self._loads_by_deployment.get(deployment_id, {}))

    # Indexes of the two maps, built once on first use: a refresh asks for levels once per prediction
    # group, and scanning every baseline each time made it quadratic in the store.
    @cached_property
    def _levels_by_dataset(self) -> dict[tuple[int, str], dict[int, float]]:
        index: dict[tuple[int, str], dict[int, float]] = defaultdict(dict)
        for (deployment_id, concurrency, dataset), tps in self.by_dataset.items():
            index[(deployment_id, dataset)][concurrency] = tps
        return index

    @cached_property
    def _loads_by_deployment(self) -> dict[int, dict[int, float]]:
        index: dict[int, dict[int, float]] = defaultdict(dict)
        for (deployment_id, concurrency), tps in self.by_concurrency.items():
            index[deployment_id][concurrency] = tps
        return index

    def choose(
        self,
        deployment_id: int,
        concurrency: int,
        dataset: str | None,
        facts: DeploymentFacts,
        comm_fraction: float = 0.0,
        profile_tps: float | None = None,
        extrapolate: bool = True,
    ) -> float | None:
        """The baseline at this load by costmodel.sources.choose_baseline: measured, else interpolated
        between (or, with `extrapolate`, carried from) the deployment's measured loads, else the profile's."""
        return choose_baseline(
            self.lookup(deployment_id, concurrency, dataset),
            self.levels(deployment_id, dataset),
            concurrency,
            facts,
            comm_fraction,
            profile_tps,
            extrapolate,
        )

    def at_reference(
        self,
        deployment_id: int,
        fit: CalibratedSet | None,
        concurrency: int,
        dataset: str | None,
        facts: DeploymentFacts,
        comm_fraction: float = 0.0,
    ) -> float | None:
        """The baseline at the load a calibrated set's fit states its drafting and overhead at (its
        reference_concurrency), for CostSet.costs' reference_baseline_tps; None when the set has no
        reference load or this is it."""
        reference = fit.reference_concurrency if fit is not None else None
        if reference is None or reference == concurrency:
            return None
        return self.choose(deployment_id, reference, dataset, facts, comm_fraction)


@dataclass(frozen=True)
class RefreshContext:
    """What one refresh reads once and every batch of it shares (answers/refresh_context.refresh_context)."""

    deployments: dict[int, DeploymentRow]
    facts: dict[int, DeploymentFacts]
    drafters: dict[int, Drafter]
    plans: dict[int, list[SetPlan]]  # deployment id -> its active sets
    versions: dict[int, int]  # parameter set id -> version, for the verdict's text
    baselines: Baselines
    global_threshold: float
    now: datetime
    # benchmark id -> what its drafter's earlier benchmarks say (drafters without training metrics)
    references: Mapping[int, Reference] = field(default_factory=dict)
    # deployment id -> baselines estimated from its speculative benchmarks (none ran without speculation)
    estimates: dict[int, BaselineEstimate] = field(default_factory=dict)
    # deployment id -> the measurement noise its repeat groups show (db/repeats.py)
    noise: dict[int, float] = field(default_factory=dict)
    # the deployments whose load model (behind `estimates`) was fitted for this refresh, not reused
    refitted: tuple[int, ...] = ()
    # deployment id -> the median context its benchmarks stated, where they span more than one
    reference_contexts: dict[int, float] = field(default_factory=dict)
