"""The reading of what one refresh shares (specdash.rows.RefreshContext): the deployments and what the
priors know of them, each drafter's identity and trained rates, the active parameter sets as the cost
model's CostSets, the measured baselines and the gap threshold."""

from collections import defaultdict
from collections.abc import Collection, Sequence
from dataclasses import replace

from sqlalchemy import select
from sqlalchemy.orm import Session

from specdash.costmodel.context import decode_context, reference_context, spans_contexts
from specdash.db.acceptance import checkpoint_rates
from specdash.db.bulk import select_in
from specdash.db.loadmodels import fitted_estimates
from specdash.db.models import Benchmark, Checkpoint, Deployment, ParameterSet, Run, utcnow
from specdash.db.parameters import cost_set, deployment_facts, ensure_theory_set, load_baselines
from specdash.db.repeats import noise_by_deployment
from specdash.db.settings import get_gap_threshold
from specdash.rows import DeploymentRow, Drafter, RefreshContext, SetPlan


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
        deployments={
            i: DeploymentRow(d.name, d.baseline_tps, d.gap_threshold) for i, d in deployments.items()
        },
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


def widen_context(
    session: Session, context: RefreshContext, needed: Collection[int], deployment_ids: set[int]
) -> RefreshContext:
    """The context with the baselines and estimates of the `needed` deployments too (backfilled
    benchmarks may be on deployments the given ones are not); `deployment_ids`, those read so far, grows
    with them."""
    if set(needed) <= deployment_ids:
        return context
    fitted = fitted_estimates(session, sorted(set(needed) - deployment_ids), keep=True)
    deployment_ids |= set(needed)
    return replace(
        context,
        baselines=load_baselines(session, deployment_ids=sorted(deployment_ids)),
        estimates={**context.estimates, **fitted.estimates},
        refitted=(*context.refitted, *fitted.refitted),
    )
