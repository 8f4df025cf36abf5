"""Each deployment's load observations and load fits as the store keeps them: its speculative benchmarks
read as load observations, its drafters' families, its stored load fit (read and written), and the loads
it was benchmarked at (answers/estimates.py estimates the baselines of those measured only with
speculation)."""

from collections import defaultdict
from collections.abc import Sequence

from sqlalchemy import case, func, select, update
from sqlalchemy.orm import Session

from specdash.costmodel.load_observations import (
    BenchmarkLoad,
    FitOutcome,
    LoadShape,
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
        .order_by(Benchmark.id)  # a drafter's family is its latest benchmark's, as in load_shapes
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
    keeps (load_shapes): a prior on a measured step needs the families, not the 100,000 observations."""
    shape = load_shapes(session, [deployment_id]).get(deployment_id)
    return dict(shape.families) if shape is not None else {}


def load_shapes(
    session: Session, deployment_ids: Sequence[int], after: int | None = None
) -> dict[int, LoadShape]:
    """Per deployment, the shape of the load observations speculative_benchmarks gives (their loads,
    settings, drafters with their families, and how many benchmarks; of the benchmarks with an id above
    `after` only, when given), read as one row per drafter, setting, load and kind of tau rather than
    one per benchmark. The latest benchmark's algorithm decides a drafter's family."""
    tau = Benchmark.accept_length
    # a group's taus are all >= 1, all other non-zero values, or all unmeasured (NULL or 0)
    tau_kind = case((tau >= 1, 1), (func.coalesce(tau, 0) != 0, 0))
    rates_from = case((tau_kind.is_(None), Benchmark.checkpoint_id))
    keys = (
        Benchmark.deployment_id,
        Run.id,
        Run.speculative_algorithm,
        Benchmark.speculative_algorithm,
        Benchmark.num_steps,
        Benchmark.topk,
        Benchmark.num_draft_tokens,
        Benchmark.concurrency,
        tau_kind,
        rates_from,
    )
    query = (
        select(*keys, func.max(tau), func.count(), func.max(Benchmark.id).label("latest"))
        .outerjoin(Checkpoint, Benchmark.checkpoint_id == Checkpoint.id)
        .outerjoin(Checkpoint.run)
        .where(
            Benchmark.deployment_id.in_(list(deployment_ids)),
            Benchmark.speculative_algorithm.is_not(None),
            Benchmark.superseded_by_id.is_(None),
            Benchmark.decode_tps > 0,
        )
        .group_by(*keys)
        .order_by("latest")
    )
    if after is not None:
        query = query.where(Benchmark.id > after)
    groups = session.execute(query).all()
    untrained = sorted({row[9] for row in groups if row[9]})
    rates = checkpoint_rates(session, untrained) if untrained else {}
    found: dict[int, tuple[set, set, set, dict[str, str], list[int]]] = {}
    for (
        deployment_id,
        run_id,
        drafter_algorithm,
        algorithm,
        k,
        topk,
        n,
        load,
        _,
        checkpoint_id,
        measured,
        count,
        _,
    ) in groups:
        setting = benchmark_setting(k, topk, n)
        trained = rates.get(checkpoint_id) if checkpoint_id else None
        if setting is None or observed_tau(measured, trained, setting) is None:
            continue
        loads, settings, drafters, families, counted = found.setdefault(
            deployment_id, (set(), set(), set(), {}, [0])
        )
        drafter = str(run_id or "")
        loads.add(float(max(load, 1)))
        settings.add(setting)
        drafters.add(drafter)
        families[drafter] = drafter_family(drafter_algorithm, algorithm)
        counted[0] += count
    return {
        d: LoadShape(frozenset(loads), frozenset(settings), frozenset(drafters), families, counted[0])
        for d, (loads, settings, drafters, families, counted) in found.items()
    }


def current_shapes(
    session: Session, deployment_ids: Sequence[int], stored: dict[int, StoredFit]
) -> dict[int, LoadShape]:
    """The shape of each deployment's load observations now: on SQLite, where writers take turns (ids
    grow in the order benchmarks are committed), a stored fit's shape at its last check with that of the
    benchmarks stored since; else read whole. A write that deletes, supersedes or rewrites benchmarks
    drops the checks (recheck_fits)."""
    checked: dict[int, tuple[LoadShape, int]] = {}
    if session.get_bind().dialect.name == "sqlite":
        for d, fit in stored.items():
            if fit.shape is not None and fit.checked_through is not None:
                checked[d] = (fit.shape, fit.checked_through)
    unchecked = [d for d in deployment_ids if d not in checked]
    shapes = load_shapes(session, unchecked) if unchecked else {}
    for through in sorted({through for _, through in checked.values()}):
        ids = [d for d, (_, at) in checked.items() if at == through]
        later = load_shapes(session, ids, after=through)
        for d in ids:
            shape = checked[d][0]
            shapes[d] = shape.with_later(later[d]) if d in later else shape
    return shapes


def latest_benchmark_id(session: Session) -> int:
    """The store's largest benchmark id (0 for none): what a check of the fits has seen."""
    return session.scalar(select(func.max(Benchmark.id))) or 0


def mark_checked(session: Session, deployment_id: int, shape: LoadShape, through: int) -> None:
    """Keep that the deployment's stored fit was found to hold for data of this shape, the store's largest
    benchmark id being `through` (the next check reads only what is stored after it)."""
    kept = session.get(LoadFit, deployment_id)
    if kept is not None and (kept.checked_through, kept.shape) != (through, shape.to_json()):
        kept.checked_through, kept.checked_benchmarks, kept.shape = through, shape.benchmarks, shape.to_json()


def recheck_fits(session: Session) -> None:
    """The next refresh checks every stored fit against its data read whole: benchmarks were deleted,
    superseded or rewritten (or the training rates their accept lengths come from changed), which reading
    only the benchmarks stored since a check would not see."""
    session.execute(update(LoadFit).values(checked_through=None))


def stored_fits(session: Session, deployment_ids: Sequence[int]) -> dict[int, StoredFit]:
    """The stored load fits of these deployments, by deployment id."""
    return {
        f.deployment_id: StoredFit(
            f.data_key,
            f.benchmarks,
            f.estimate,
            LoadShape.from_json(f.shape) if f.shape else None,
            f.checked_through,
        )
        for f in session.scalars(select(LoadFit).where(LoadFit.deployment_id.in_(list(deployment_ids))))
    }


def store_load_fit(
    session: Session, deployment_id: int, outcome: FitOutcome, through: int | None = None
) -> None:
    """Keep a load fit made now as the deployment's stored one (replacing what was stored), checked against
    its data with the store's largest benchmark id `through` (None: to be checked in full next time)."""
    kept = session.get(LoadFit, deployment_id)
    if kept is None:
        kept = LoadFit(deployment_id=deployment_id)
        session.add(kept)
    kept.data_key, kept.benchmarks = outcome.data_key, outcome.benchmarks
    kept.estimate, kept.fitted_at = outcome.estimate.to_json(), utcnow()
    kept.checked_through = kept.checked_benchmarks = kept.shape = None
    if outcome.shape is not None and through is not None:
        mark_checked(session, deployment_id, outcome.shape, through)


def served_loads(session: Session, deployment_id: int) -> list[int]:
    """The loads (concurrencies) a deployment was benchmarked at, with or without speculation."""
    levels = session.scalars(
        select(Benchmark.concurrency).where(Benchmark.deployment_id == deployment_id).distinct()
    ).all()
    return sorted({int(c) for c in levels if c})
