"""What one refresh reads once and every batch of it shares: the deployments and what the priors know of
them, each drafter's identity and trained rates, the active parameter sets as the cost model's CostSets,
the measured baselines and the gap threshold."""

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import NamedTuple

from sqlalchemy import select
from sqlalchemy.orm import Session

from specdash.costmodel.calibrated import CostSet
from specdash.costmodel.context import decode_context, reference_context, spans_contexts
from specdash.costmodel.estimated import BaselineEstimate
from specdash.costmodel.loadmodel import LoadParams
from specdash.costmodel.priors import DeploymentFacts
from specdash.db.acceptance import checkpoint_rates
from specdash.db.bulk import select_in
from specdash.db.history import Reference
from specdash.db.loadmodels import fitted_estimates
from specdash.db.models import Benchmark, Checkpoint, Deployment, ParameterSet, Run, utcnow
from specdash.db.parameters import Baselines, cost_set, deployment_facts, ensure_theory_set, load_baselines
from specdash.db.repeats import noise_by_deployment
from specdash.db.settings import get_gap_threshold


@dataclass(frozen=True, slots=True)
class Drafter:
    """What a checkpoint tells the cost model: its run's identity and its trained rates."""

    speculative_algorithm: str | None
    hidden_size: int | None
    ttt_length: int | None
    run_id: int
    rates: tuple[float, ...]


class SetPlan(NamedTuple):
    """An active parameter set a deployment's predictions are made under."""

    id: int
    source: str  # theory | calibrated
    costs: CostSet
    band: float | None  # the fit's error band; None: the prior's, by accept-length source
    load: LoadParams | None = None  # a calibrated set's round of batch and depth, on the deployment's target


@dataclass(frozen=True)
class RefreshContext:
    deployments: dict[int, Deployment]
    facts: dict[int, DeploymentFacts]
    drafters: dict[int, Drafter]
    plans: dict[int, list[SetPlan]]  # deployment id -> its active sets
    versions: dict[int, int]  # parameter set id -> version, for the verdict's text
    baselines: Baselines
    global_threshold: float
    now: datetime
    # benchmark id -> what its drafter's earlier benchmarks say (drafters without training metrics)
    references: dict[int, Reference] = field(default_factory=dict)
    # deployment id -> baselines estimated from its speculative benchmarks (none ran without speculation)
    estimates: dict[int, BaselineEstimate] = field(default_factory=dict)
    # deployment id -> the measurement noise its repeat groups show (db/repeats.py)
    noise: dict[int, float] = field(default_factory=dict)
    # the deployments whose load model (behind `estimates`) was fitted for this refresh, not reused
    refitted: tuple[int, ...] = ()
    # deployment id -> the median context its benchmarks stated, where they span more than one
    reference_contexts: dict[int, float] = field(default_factory=dict)


def read_context(
    session: Session,
    checkpoint_ids: Sequence[int] | None,
    deployment_ids: Sequence[int] | None = None,
    add_theory_sets: bool = True,
) -> RefreshContext:
    """The inputs of a refresh of these checkpoints' benchmarks (every checkpoint's when None) on these
    deployments (the baselines of those only; every deployment's when None); each deployment's current
    profile gets its theory set first, unless a reader (`add_theory_sets` False) takes the sets stored;
    load models fitted for the estimates (of those deployments) are stored too, unless a reader's."""
    deployments = {d.id: d for d in session.scalars(select(Deployment))}
    for deployment in deployments.values() if add_theory_sets else ():
        ensure_theory_set(session, deployment)
    facts = {deployment_id: deployment_facts(d) for deployment_id, d in deployments.items()}
    plans: dict[int, list[SetPlan]] = defaultdict(list)
    versions = {}
    for pset in session.scalars(select(ParameterSet).where(ParameterSet.is_active.is_(True))):
        costs = cost_set(pset)
        fit = costs.fit
        by_load = fit is not None and fit.predicts_by_load()
        load = fit.load_params(facts[pset.deployment_id].architecture) if fit and by_load else None
        plans[pset.deployment_id].append(SetPlan(pset.id, pset.source, costs, costs.error_band(), load))
        versions[pset.id] = pset.version
    fitted = fitted_estimates(session, deployment_ids, keep=add_theory_sets)
    return RefreshContext(
        deployments=deployments,
        facts=facts,
        drafters=read_drafters(session, checkpoint_ids),
        plans=plans,
        versions=versions,
        baselines=load_baselines(session, deployment_ids=deployment_ids),
        global_threshold=get_gap_threshold(session),
        now=utcnow(),
        estimates=fitted.estimates,
        noise=noise_by_deployment(session),
        refitted=fitted.refitted,
        reference_contexts=reference_contexts(session, deployment_ids),
    )


def reference_contexts(session: Session, deployment_ids: Sequence[int] | None) -> dict[int, float]:
    """Each deployment's median stated context (costmodel.context), where its benchmarks span two: a
    benchmark far from it is judged against a prediction made for another context."""
    query = (
        select(Benchmark.deployment_id, Benchmark.input_tokens, Benchmark.output_tokens)
        .where(Benchmark.input_tokens.is_not(None), Benchmark.superseded_by_id.is_(None))
        .distinct()
    )
    if deployment_ids is not None:
        query = query.where(Benchmark.deployment_id.in_(list(deployment_ids)))
    stated: dict[int, list[float]] = defaultdict(list)
    for deployment_id, input_tokens, output_tokens in session.execute(query):
        context = decode_context(input_tokens, output_tokens)
        if context is not None:
            stated[deployment_id].append(context)
    return {d: reference_context(c) for d, c in stated.items() if spans_contexts(c)}


def read_drafters(session: Session, checkpoint_ids: Sequence[int] | None) -> dict[int, Drafter]:
    rates = checkpoint_rates(session, checkpoint_ids)
    query = select(Checkpoint.id, Run.speculative_algorithm, Run.hidden_size, Run.ttt_length, Run.id).join(
        Run, Checkpoint.run_id == Run.id
    )
    return {
        checkpoint_id: Drafter(algorithm, hidden_size, ttt_length, run_id, rates.get(checkpoint_id, ()))
        for checkpoint_id, algorithm, hidden_size, ttt_length, run_id in select_in(
            session, query, Checkpoint.id, checkpoint_ids
        )
    }
