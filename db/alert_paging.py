"""One page of the alert list by id, the most severe first and within a severity the largest gap, found
without sorting every alert that matches; and the values the list's filters can take, found without
listing every alert."""

from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

from specdash.costmodel.diagnoses import SEVERITY_ORDER
from specdash.db.models import Alert, Benchmark, Checkpoint, Deployment, Gap, Prediction, Run


def page_ids(session: Session, keys: Select, offset: int, limit: int) -> list[int]:
    """The page's alert ids among `keys` (a select of Alert.benchmark_id over the verdict joins), the most
    severe first: one severity at a time, each sorted by its largest gaps alone and only until the page is
    full (sorting all 120,000 open alerts of a 400,000-benchmark store for the Overview's top five cost a
    second). A severity the offset skips whole is only counted."""
    ids: list[int] = []
    unranked = Alert.severity.is_(None) | Alert.severity.not_in(list(SEVERITY_ORDER))
    for severity in [*(Alert.severity == name for name in SEVERITY_ORDER), unranked]:
        if len(ids) >= limit:
            break
        part = keys.where(severity)
        if offset:
            n = session.scalar(select(func.count()).select_from(part.subquery())) or 0
            if n <= offset:
                offset -= n
                continue
        ordered = part.order_by(func.abs(func.coalesce(Gap.gap, 0)).desc(), Alert.benchmark_id)
        ids += session.scalars(ordered.offset(offset).limit(limit - len(ids)))
        offset = 0
    return ids


def alert_choices(session: Session) -> dict[str, list[str]]:
    """Values the alert filters can take: prediction sources, deployments and runs that have verdicts.
    Each found from its own side (a run or deployment with one verdict of a checkpoint's benchmark, a
    source whose prediction judges one) instead of listing every verdict with its joins."""
    verdicts = (
        select(Alert.benchmark_id)
        .join(Benchmark, Alert.benchmark_id == Benchmark.id)
        .join(Checkpoint, Benchmark.checkpoint_id == Checkpoint.id)
    )
    runs = select(Run.name).where(verdicts.where(Checkpoint.run_id == Run.id).exists())
    deployments = select(Deployment.name).where(
        verdicts.where(Benchmark.deployment_id == Deployment.id).exists()
    )
    # a verdict's gap is always of a checkpoint's benchmark (the refresh judges no other), so the sources
    # need not look the benchmarks up
    sources = (
        select(Prediction.source)
        .select_from(Alert)
        .join(Gap, Alert.gap_id == Gap.id)
        .join(Prediction, Gap.prediction_id == Prediction.id)
        .distinct()
    )
    return {
        name: sorted(v for v in session.scalars(query) if v is not None)
        for name, query in (("source", sources), ("deployment", deployments), ("run", runs))
    }
