"""A deployment's load observations and what is fitted to them: the medians a fit takes, the accept length
each observation carries, the estimate of its no-speculation baselines, whether a stored fit still holds,
and the load model fitted at every load."""

import hashlib
import json
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from specdash.costmodel.acceptance import predict_accept_length
from specdash.costmodel.domain import Setting
from specdash.costmodel.estimated import BaselineEstimate, estimate_baselines
from specdash.costmodel.loadmodel import LoadObservation, LoadParams, prior_load_params
from specdash.costmodel.observations import CalibrationObservation, NotEnoughObservations
from specdash.costmodel.priors import DeploymentFacts
from specdash.costmodel.throughput import verified_tokens

# what the priors assume for T1 when nothing measured or stated one (only its shape matters to a fit)
UNKNOWN_STEP_MS = 10.0
# A deployment's stored load fit is made again when its loads, settings, drafters or what the priors know
# of it change, or when more than this share of the benchmarks it rests on are new (or gone); else every
# refresh reuses it. A small file changes the medians it was fitted to by little.
REFIT_SHARE = 0.1
# part of every fit's key: a change to the fit or to what it stores makes every stored fit again
FIT_VERSION = 1

# one benchmark as a load fit reads it: (its key, tok/s, tau)
LoadKey = tuple[str, int, int, int, int]  # (drafter, steps, topk, verified tokens, load)
BenchmarkLoad = tuple[LoadKey, float, float]


@dataclass(frozen=True)
class DeploymentLoad:
    """The load model a deployment's predictions at any concurrency come from, and what it rests on."""

    params: LoadParams
    source: str  # calibrated | theory
    baseline_estimated: bool  # no run without speculation: the step at K = 0 is an estimate
    parameter_set_id: int | None = None
    acc_to_acceptance: float = 1.0  # the set's factor on training rates: the fit's taus used it
    # whether the deployment's own predictions come from it (fitted at several loads, or on estimated
    # baselines); else the batch-1 model predicts at its measured loads and this one serves the rest
    by_load: bool = False


class StoredFit(NamedTuple):
    """A deployment's load fit as stored: the key of the data it was fitted on, how many benchmarks that
    data held, and the estimate it made; and the shape of its data at the last check that it held, with
    the store's largest benchmark id then (None: not checked since it was made)."""

    data_key: str
    benchmarks: int
    estimate: dict[str, Any]
    shape: "LoadShape | None" = None
    checked_through: int | None = None


class LoadShape(NamedTuple):
    """What decides whether a deployment's stored load fit still holds (fit_key, refit_needed), without
    its benchmarks' numbers: the loads, settings (steps, top-k, verified tokens) and drafters of its load
    observations, each drafter's family, and how many benchmarks they rest on."""

    loads: frozenset[float]
    settings: frozenset[tuple[int, int, int]]
    drafters: frozenset[str]
    families: Mapping[str, str]
    benchmarks: int

    def with_later(self, later: "LoadShape") -> "LoadShape":
        """This shape with that of benchmarks stored after it (their drafters' families are the latest)."""
        return LoadShape(
            self.loads | later.loads,
            self.settings | later.settings,
            self.drafters | later.drafters,
            {**self.families, **later.families},
            self.benchmarks + later.benchmarks,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "loads": sorted(self.loads),
            "settings": sorted(self.settings),
            "drafters": sorted(self.drafters),
            "families": dict(sorted(self.families.items())),
            "benchmarks": self.benchmarks,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "LoadShape":
        return cls(
            frozenset(float(load) for load in data["loads"]),
            frozenset((int(k), int(w), int(n)) for k, w, n in data["settings"]),
            frozenset(str(d) for d in data["drafters"]),
            {str(d): str(f) for d, f in data["families"].items()},
            int(data["benchmarks"]),
        )


class FitOutcome(NamedTuple):
    """A deployment's estimate for now: the stored one while it holds, else one fitted now (`refitted`),
    with the key and count a stored fit of it would keep."""

    estimate: BaselineEstimate
    refitted: bool
    data_key: str
    benchmarks: int
    shape: LoadShape | None = None  # of the data it holds for


def shape_of(rows: Sequence[BenchmarkLoad], families: Mapping[str, str]) -> LoadShape:
    """The shape of these benchmarks' load observations (db/loadmodels.load_shapes reads it in the store)."""
    keys = {key for key, _, _ in rows}
    return LoadShape(
        frozenset(float(max(key[4], 1)) for key in keys),
        frozenset((key[1], key[2], key[3]) for key in keys),
        frozenset(key[0] for key in keys),
        dict(families),
        len(rows),
    )


def median_observations(rows: Iterable[BenchmarkLoad]) -> list[LoadObservation]:
    """One observation per (drafter, setting, load): the median tok/s and tau of its benchmarks, so that a
    deployment of thousands of benchmarks is fitted as fast as one of a sweep's dozens."""
    grouped: dict[LoadKey, list[tuple[float, float]]] = defaultdict(list)
    for key, tps, tau in rows:
        grouped[key].append((tps, tau))
    out = []
    for (drafter, steps, topk, tokens, concurrency), values in grouped.items():
        out.append(
            LoadObservation(
                concurrency=float(max(concurrency, 1)),
                steps=steps,
                measured_tps=statistics.median(v[0] for v in values),
                accept_length=statistics.median(v[1] for v in values),
                topk=topk,
                draft_tokens=tokens if steps else None,
                drafter=drafter,
                label=f"{drafter or 'baseline'} K={steps} B={concurrency}",
            )
        )
    return out


def benchmark_setting(k: int | None, topk: int | None, n: int | None) -> tuple[int, int, int] | None:
    """(draft steps, top-k, verified tokens) of a benchmark's stated setting; None without a depth."""
    setting = Setting(None, k, topk, n)
    steps = setting.depth
    return (steps, setting.width, verified_tokens(steps, setting.width, n)) if steps else None


def observed_tau(
    tau: float | None, trained: Sequence[float] | None, setting: tuple[int, int, int]
) -> float | None:
    """The accept length a load observation takes: the measured one, else chained from the checkpoint's
    training rates; None when neither gives one of at least 1."""
    if not tau and trained:
        tau = predict_accept_length(trained, *setting).accept_length
    return tau if tau and tau >= 1 else None


def baseline_observations(levels: Mapping[int, float]) -> list[LoadObservation]:
    """Measured no-speculation load levels {concurrency: tok/s} as rounds of depth 0."""
    return [
        LoadObservation(float(max(c, 1)), 0, tps, label=f"baseline B={c}")
        for c, tps in sorted(levels.items())
    ]


def fitted_observations(
    observations: Sequence[CalibrationObservation], concurrencies: Sequence[int], acc_to_acceptance: float
) -> list[LoadObservation]:
    """Calibration's observations (at these loads) as the load fit sees them: tau measured, else from the
    training rates under the fitted acc-to-acceptance factor."""
    out = []
    for o, concurrency in zip(observations, concurrencies, strict=True):
        tau = o.measured_accept_length
        if not tau and o.training_rates:
            tau = predict_accept_length(
                o.training_rates, o.steps, o.topk, o.draft_tokens, acc_to_acceptance
            ).accept_length
        if not tau:
            continue
        out.append(
            LoadObservation(
                float(max(concurrency, 1)),
                o.steps,
                o.measured_tps,
                tau,
                o.topk,
                o.draft_tokens,
                o.drafter,
                o.label,
            )
        )
    return out


def estimate_for(
    observations: Sequence[LoadObservation], facts: DeploymentFacts, families: Mapping[str, str]
) -> BaselineEstimate | None:
    """The estimated baselines of a deployment with only these speculative observations (None when they
    cannot be fitted)."""
    if not observations:
        return None
    prior = prior_load_params(facts, UNKNOWN_STEP_MS, dict(families))
    try:
        return estimate_baselines(observations, prior)
    except (NotEnoughObservations, ValueError):
        return None


def fit_key(
    observations: Sequence[LoadObservation], facts: DeploymentFacts, families: Mapping[str, str]
) -> str:
    """What a stored fit must share with the data now to be reused, but for how many benchmarks there are:
    the loads, settings and drafters (with their families) of the observations and what the priors know of
    the deployment."""
    shape = LoadShape(
        frozenset(o.concurrency for o in observations),
        frozenset((o.steps, o.topk, o.draft_tokens or 0) for o in observations),
        frozenset(o.drafter for o in observations),
        families,
        len(observations),
    )
    return shape_key(shape, facts)


def shape_key(shape: LoadShape, facts: DeploymentFacts) -> str:
    """fit_key of observations of this shape."""
    payload = [
        FIT_VERSION,
        sorted(shape.loads),
        sorted(shape.settings),
        sorted(shape.drafters),
        sorted(shape.families.items()),
        repr(facts),
    ]
    return hashlib.sha256(json.dumps(payload).encode()).hexdigest()


def stored_outcome(shape: LoadShape, facts: DeploymentFacts, stored: StoredFit | None) -> FitOutcome | None:
    """The stored fit's estimate while it holds for data of this shape (refit_needed says no), else None:
    whether a deployment's fit is reused is decided without reading its benchmarks one by one."""
    key = shape_key(shape, facts)
    if stored is None or refit_needed(stored, key, shape.benchmarks):
        return None
    return FitOutcome(
        BaselineEstimate.from_json(stored.estimate, facts.architecture), False, key, shape.benchmarks, shape
    )


def refit_needed(stored: StoredFit | None, key: str, benchmarks: int) -> bool:
    """Whether a deployment's load model must be fitted again: nothing stored, its data changed in shape,
    or more than REFIT_SHARE of its benchmarks are new or gone since the stored fit."""
    if stored is None or stored.data_key != key:
        return True
    return abs(benchmarks - stored.benchmarks) > REFIT_SHARE * stored.benchmarks


def estimate_deployment(
    rows: Sequence[BenchmarkLoad],
    facts: DeploymentFacts,
    families: Mapping[str, str],
    stored: StoredFit | None,
) -> FitOutcome | None:
    """A deployment's estimated baselines from its benchmarks: the stored fit's while it holds for their
    shape (stored_outcome), else fitted now (None when they cannot be fitted)."""
    shape = shape_of(rows, families)
    kept = stored_outcome(shape, facts, stored)
    if kept is not None:
        return kept
    estimate = estimate_for(median_observations(rows), facts, families)
    return None if estimate is None else FitOutcome(estimate, True, shape_key(shape, facts), len(rows), shape)


def fit_deployment_load(
    observations: Sequence[LoadObservation], facts: DeploymentFacts, families: Mapping[str, str]
) -> LoadParams | None:
    """The load model fitted to a deployment's trusted observations at every load (None: nothing to fit)."""
    if not any(o.speculative for o in observations):
        return None
    from specdash.costmodel.loadfit import fit_load_model  # numpy: only where there is a fit to make

    prior = prior_load_params(facts, UNKNOWN_STEP_MS, dict(families))
    try:
        return fit_load_model(observations, prior).params
    except NotEnoughObservations:
        return None
