"""What one refresh shares (specdash.rows.RefreshContext), read from the store and planned here: the
deployments and what the priors know of them, each drafter's identity and trained rates, the active
parameter sets as plans, the measured and estimated baselines and the gap threshold."""

from collections import defaultdict
from collections.abc import Collection, Sequence
from dataclasses import replace

from sqlalchemy.orm import Session

from specdash.answers.estimates import fitted_estimates
from specdash.answers.loadfits import set_plan
from specdash.db.models import utcnow
from specdash.db.parameters import ensure_theory_sets, load_baselines, read_active_sets, read_deployments
from specdash.db.refresh_context import read_drafters, reference_contexts
from specdash.db.repeats import noise_by_deployment
from specdash.db.settings import get_gap_threshold
from specdash.rows import RefreshContext, SetPlan


def refresh_context(
    session: Session,
    checkpoint_ids: Sequence[int] | None,
    deployment_ids: Sequence[int] | None = None,
    add_theory_sets: bool = True,
) -> RefreshContext:
    """The inputs of a refresh of these checkpoints' benchmarks (every checkpoint's when None) on these
    deployments (the baselines of those only; every deployment's when None); each deployment's current
    profile gets its theory set first, unless a reader (`add_theory_sets` False) takes the sets stored;
    load models fitted for the estimates (of those deployments) are stored too, unless a reader's."""
    if add_theory_sets:
        ensure_theory_sets(session)
    deployments, facts = read_deployments(session)
    plans: dict[int, list[SetPlan]] = defaultdict(list)
    versions = {}
    for active in read_active_sets(session):
        plans[active.deployment_id].append(set_plan(active, facts[active.deployment_id]))
        versions[active.id] = active.version
    baselines = load_baselines(session, deployment_ids=deployment_ids)
    fitted = fitted_estimates(session, deployment_ids, keep=add_theory_sets, facts=facts, measured=baselines)
    return RefreshContext(
        deployments=deployments,
        facts=facts,
        drafters=read_drafters(session, checkpoint_ids),
        plans=plans,
        versions=versions,
        baselines=baselines,
        global_threshold=get_gap_threshold(session),
        now=utcnow(),
        estimates=fitted.estimates,
        noise=noise_by_deployment(session, deployment_ids),
        refitted=fitted.refitted,
        reference_contexts=reference_contexts(session, deployment_ids),
    )


def widen_context(
    session: Session, context: RefreshContext, needed: Collection[int], deployment_ids: set[int]
) -> RefreshContext:
    """The context with the baselines, estimates and noise of the `needed` deployments too (backfilled
    benchmarks may be on deployments the given ones are not); `deployment_ids`, those read so far, grows
    with them."""
    if set(needed) <= deployment_ids:
        return context
    added = sorted(set(needed) - deployment_ids)
    fitted = fitted_estimates(session, added, keep=True)
    deployment_ids |= set(needed)
    return replace(
        context,
        baselines=load_baselines(session, deployment_ids=sorted(deployment_ids)),
        estimates={**context.estimates, **fitted.estimates},
        noise={**context.noise, **noise_by_deployment(session, added)},
        refitted=(*context.refitted, *fitted.refitted),
    )
