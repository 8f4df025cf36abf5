"""Each deployment's load observations and load fits as the store keeps them: its speculative benchmarks
read as load observations, its drafters' families, its stored load fit (read and written), and the loads
it was benchmarked at (answers/estimates.py estimates the baselines of those measured only with
speculation)."""

from collections import defaultdict
from collections.abc import Sequence

from sqlalchemy import case, func, select
from sqlalchemy.orm import Session

from specdash.costmodel.load_observations import (
    BenchmarkLoad,
    FitOutcome,
    StoredFit,
    benchmark_setting,
    median_observations,
    observed_tau,
)
from specdash.costmodel.loadmodel import LoadObservation
from specdash.costmodel.priors import drafter_family
from specdash.db.acceptance import checkpoint_rates
from specdash.db.load_fit_models import LoadFit
from specdash.db.models import Benchmark, Checkpoint, Run, utcnow

Keyed = dict[int, list[BenchmarkLoad]]


def speculative_observations(
    session: Session, deployment_ids: Sequence[int] | None = None
) -> tuple[dict[int, list[LoadObservation]], dict[int, dict[str, str]]]:
    """Per deployment, its speculative benchmarks with an accept length (measured, else the drafter's
    training rates chained) as load observations, and each drafter's (run id's) family."""
    keyed, families = speculative_benchmarks(session, deployment_ids)
    return {d: median_observations(v) for d, v in keyed.items()}, families


def speculative_benchmarks(
    session: Session, deployment_ids: Sequence[int] | None
) -> tuple[Keyed, dict[int, dict[str, str]]]:
    """speculative_observations' benchmarks before their medians: per deployment, one ((drafter, steps,
    topk, verified tokens, load), tok/s, tau) per benchmark."""
    query = (
        select(
            Benchmark.deployment_id,
            Benchmark.checkpoint_id,
            Benchmark.speculative_algorithm,
            Benchmark.num_steps,
            Benchmark.topk,
            Benchmark.num_draft_tokens,
            Benchmark.concurrency,
            Benchmark.decode_tps,
            Benchmark.accept_length,
            Run.id.label("run_id"),
            Run.speculative_algorithm.label("drafter_algorithm"),
        )
        .outerjoin(Checkpoint, Benchmark.checkpoint_id == Checkpoint.id)
        .outerjoin(Checkpoint.run)
        .where(Benchmark.speculative_algorithm.is_not(None), Benchmark.superseded_by_id.is_(None))
    )
    if deployment_ids is not None:
        query = query.where(Benchmark.deployment_id.in_(deployment_ids))
    # plain tuples, each setting and drafter worked out once: a deployment holds 100,000 benchmarks at the
    # bench's scale 10, and attribute access and these calls per row cost more than the query
    rows = [tuple(row) for row in session.execute(query)]
    untrained = sorted({row[1] for row in rows if row[1] and not row[8]})
    rates = checkpoint_rates(session, untrained) if untrained else {}
    settings: dict[tuple, tuple[int, int, int] | None] = {}
    keyed: Keyed = defaultdict(list)
    families: dict[int, dict[str, str]] = defaultdict(dict)
    for (
        deployment_id,
        checkpoint_id,
        algorithm,
        k,
        topk,
        n,
        concurrency,
        tps,
        tau,
        run_id,
        drafter_algorithm,
    ) in rows:
        if (k, topk, n) not in settings:
            settings[(k, topk, n)] = benchmark_setting(k, topk, n)
        setting = settings[(k, topk, n)]
        if setting is None or not tps or tps <= 0:
            continue
        tau = observed_tau(tau, rates.get(checkpoint_id) if checkpoint_id and not tau else None, setting)
        if tau is None:
            continue
        drafter = str(run_id or "")
        families[deployment_id][drafter] = drafter_family(drafter_algorithm, algorithm)
        keyed[deployment_id].append(((drafter, *setting, concurrency), tps, tau))
    return dict(keyed), dict(families)


def drafter_families(session: Session, deployment_id: int) -> dict[str, str]:
    """Each drafter's (run id's) family on the deployment, for the same benchmarks speculative_observations
    keeps (a depth, tok/s, an accept length measured or chained from the training rates), read as one row
    per drafter, setting and kind of tau rather than one per benchmark: a prior on a measured step needs the
    families, not the 100,000 observations. The latest benchmark's algorithm decides a drafter's family."""
    tau = Benchmark.accept_length
    # a group's taus are all >= 1, all other non-zero values, or all unmeasured (NULL or 0)
    tau_kind = case((tau >= 1, 1), (func.coalesce(tau, 0) != 0, 0))
    rates_from = case((tau_kind.is_(None), Benchmark.checkpoint_id))
    keys = (
        Run.id,
        Run.speculative_algorithm,
        Benchmark.speculative_algorithm,
        Benchmark.num_steps,
        Benchmark.topk,
        Benchmark.num_draft_tokens,
        tau_kind,
        rates_from,
    )
    query = (
        select(*keys, func.max(tau), func.max(Benchmark.id).label("latest"))
        .outerjoin(Checkpoint, Benchmark.checkpoint_id == Checkpoint.id)
        .outerjoin(Checkpoint.run)
        .where(
            Benchmark.deployment_id == deployment_id,
            Benchmark.speculative_algorithm.is_not(None),
            Benchmark.superseded_by_id.is_(None),
            Benchmark.decode_tps > 0,
        )
        .group_by(*keys)
        .order_by("latest")
    )
    groups = session.execute(query).all()
    untrained = sorted({row[7] for row in groups if row[7]})
    rates = checkpoint_rates(session, untrained) if untrained else {}
    families: dict[str, str] = {}
    for run_id, drafter_algorithm, algorithm, k, topk, n, _, checkpoint_id, measured, _ in groups:
        setting = benchmark_setting(k, topk, n)
        trained = rates.get(checkpoint_id) if checkpoint_id else None
        if setting is None or observed_tau(measured, trained, setting) is None:
            continue
        families[str(run_id or "")] = drafter_family(drafter_algorithm, algorithm)
    return families


def stored_fits(session: Session, deployment_ids: Sequence[int]) -> dict[int, StoredFit]:
    """The stored load fits of these deployments, by deployment id."""
    return {
        f.deployment_id: StoredFit(f.data_key, f.benchmarks, f.estimate)
        for f in session.scalars(select(LoadFit).where(LoadFit.deployment_id.in_(list(deployment_ids))))
    }


def store_load_fit(session: Session, deployment_id: int, outcome: FitOutcome) -> None:
    """Keep a load fit made now as the deployment's stored one (replacing what was stored)."""
    kept = session.get(LoadFit, deployment_id)
    if kept is None:
        kept = LoadFit(deployment_id=deployment_id)
        session.add(kept)
    kept.data_key, kept.benchmarks = outcome.data_key, outcome.benchmarks
    kept.estimate, kept.fitted_at = outcome.estimate.to_json(), utcnow()


def served_loads(session: Session, deployment_id: int) -> list[int]:
    """The loads (concurrencies) a deployment was benchmarked at, with or without speculation."""
    levels = session.scalars(
        select(Benchmark.concurrency).where(Benchmark.deployment_id == deployment_id).distinct()
    ).all()
    return sorted({int(c) for c in levels if c})
