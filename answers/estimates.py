"""The estimated no-speculation baselines of the deployments measured only with speculation: their
speculative benchmarks and stored load fits read, the fit reused or made now (answers/loadfits.py), and
fits made now stored when the caller asks."""

from collections.abc import Mapping, Sequence

from sqlalchemy.orm import Session

from specdash.answers.loadfits import FittedEstimates, estimate_deployments, fitted, needing_estimates
from specdash.costmodel.estimated import BaselineEstimate
from specdash.costmodel.load_observations import BenchmarkLoad, FitOutcome, stored_outcome
from specdash.costmodel.priors import DeploymentFacts
from specdash.db.loadmodels import (
    current_shapes,
    latest_benchmark_id,
    mark_checked,
    speculative_benchmarks,
    store_load_fit,
    stored_fits,
)
from specdash.db.parameters import load_baselines, read_deployments
from specdash.rows import Baselines


def fitted_estimates(
    session: Session,
    deployment_ids: Sequence[int] | None = None,
    keep: bool = False,
    facts: Mapping[int, DeploymentFacts] | None = None,
    measured: Baselines | None = None,
) -> FittedEstimates:
    """The estimated no-speculation baselines of every deployment (of those given) with speculative
    benchmarks and no benchmark without speculation, from its stored load fit unless its data changed
    materially since (refit_needed); fits made now are stored when `keep` and named in `refitted`.
    `facts`, every deployment's, and `measured`, the baselines of those given, when the caller read them
    already."""
    if facts is None:
        facts = read_deployments(session)[1]
    if measured is None:
        measured = load_baselines(session, deployment_ids=deployment_ids)
    without = needing_estimates(sorted(facts), measured, deployment_ids)
    if not without:
        return FittedEstimates({})
    # whether each stored fit holds is decided from the shape of its data; only the deployments whose
    # fit is made again have their benchmarks read (a scraped window reads none of 100,000)
    stored = stored_fits(session, without)
    through = latest_benchmark_id(session)
    shapes = current_shapes(session, without, stored)  # a deployment without one has nothing to fit
    kept: dict[int, FitOutcome] = {}
    for deployment_id, shape in shapes.items():
        outcome = stored_outcome(shape, facts[deployment_id], stored.get(deployment_id))
        if outcome is not None:
            kept[deployment_id] = outcome
            if keep:
                mark_checked(session, deployment_id, shape, through)
    changed = sorted(set(shapes) - set(kept))
    if not changed:
        return fitted(kept)
    keyed, families = speculative_benchmarks(session, changed)
    made = deployment_estimates(session, keyed, families, facts, keep, through)
    return FittedEstimates({**fitted(kept).estimates, **made.estimates}, made.refitted)


def deployment_estimates(
    session: Session,
    keyed: Mapping[int, Sequence[BenchmarkLoad]],
    families: Mapping[int, Mapping[str, str]],
    facts: Mapping[int, DeploymentFacts],
    keep: bool,
    through: int | None = None,
) -> FittedEstimates:
    """Each deployment's estimate from these benchmarks (its stored fit while the data holds, else fitted
    now), the fits made now stored when `keep` (a reader's session writes nothing), each checked against
    the data with the store's largest benchmark id `through` when given."""
    outcomes = estimate_deployments(keyed, families, facts, stored_fits(session, list(keyed)))
    for deployment_id, outcome in outcomes.items() if keep else ():
        if outcome.refitted:
            store_load_fit(session, deployment_id, outcome, through)
        elif outcome.shape is not None and through is not None:
            mark_checked(session, deployment_id, outcome.shape, through)
    return fitted(outcomes)


def estimated_baselines(
    session: Session, deployment_ids: Sequence[int] | None = None
) -> dict[int, BaselineEstimate]:
    """Deployment id -> its estimated no-speculation baselines, for every deployment (of those given)
    with speculative benchmarks and no benchmark without speculation (fitted_estimates; stores nothing)."""
    return fitted_estimates(session, deployment_ids).estimates
