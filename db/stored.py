"""The derived rows a refresh compares with before it writes: a batch's stored predictions, gaps and alerts
as typed rows, and their writes through the one row sync (db/sync.py)."""

from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import Text, func, select, type_coerce
from sqlalchemy.orm import Session

from specdash.db import bulk, parity_counts
from specdash.db.bulk import insert_rows, select_in
from specdash.db.models import BUILTIN_SOURCES, Alert, AlertEvent, Gap, Prediction
from specdash.db.sync import Stored, Synced, sync_rows
from specdash.rows import (
    ALERT_VALUES,
    GAP_VALUES,
    PREDICTION_VALUES,
    AlertValues,
    GapValues,
    PredictionKey,
    PredictionValues,
)

PREDICTION_KEY = (
    Prediction.checkpoint_id,
    Prediction.deployment_id,
    Prediction.num_steps,
    Prediction.topk,
    Prediction.num_draft_tokens,
    Prediction.concurrency,
    Prediction.dataset,
)
# A prediction row's key: its PredictionKey's columns and its source.
PREDICTION_ROW_KEY = (*(column.key for column in PREDICTION_KEY), "source")
GAP_KEY = ("benchmark_id", "prediction_id")


class StoredPredictions(NamedTuple):
    """A batch's stored predictions: the built-in ones by (PredictionKey fields..., source), the external
    ones (imported, compared with, never rewritten) by key and source."""

    builtin: dict[tuple[Any, ...], Stored]
    external: dict[PredictionKey, dict[str, tuple[int, PredictionValues]]]


def stored_predictions(
    session: Session, keys: Collection[PredictionKey], checkpoint_ids: Sequence[int] | None
) -> StoredPredictions:
    """The stored predictions of these keys (of these checkpoints whole, when given)."""
    builtin: dict[tuple[Any, ...], Stored] = {}
    external: dict[PredictionKey, dict[str, tuple[int, PredictionValues]]] = defaultdict(dict)
    columns = [Prediction.__table__.c[name] for name in PREDICTION_VALUES]
    query = select(Prediction.id, *PREDICTION_KEY, Prediction.source, *columns)
    key_end = 1 + len(PREDICTION_KEY)
    # A batch that holds its checkpoints whole reads their predictions; one that holds part of a drafter
    # split over batches reads its checkpoints' too, and keeps its own keys' (by-key selects, row-value
    # IN lists of a few hundred keys, cost more than the rows they spare, most on PostgreSQL).
    whole = checkpoint_ids is not None
    ids = checkpoint_ids if checkpoint_ids is not None else sorted({key.checkpoint_id for key in keys})
    # only at the keys' deployments and loads: a new baseline reaches one load of many checkpoints
    deployments, loads = {key.deployment_id for key in keys}, {key.concurrency for key in keys}
    if len(deployments) + len(loads) <= bulk.CHUNK // 2:
        query = query.where(
            Prediction.deployment_id.in_(sorted(deployments)), Prediction.concurrency.in_(sorted(loads))
        )
    # and, for part of a drafter, at its keys' datasets: a large drafter's parts hold a few datasets
    # each (answers/refresh.py), and each part would read every earlier part's predictions to keep none
    datasets = {key.dataset for key in keys}
    if not whole and len(datasets) <= bulk.CHUNK // 2:
        query = query.where(Prediction.dataset.in_(sorted(datasets)))
    for row in select_in(session, query, Prediction.checkpoint_id, ids):
        # keys and values as plain tuples, sliced in C: they hash and compare as the named ones they are
        # looked up by and compared with; an external one is read by name
        if not whole and row[1:key_end] not in keys:
            continue
        source = row[key_end]
        if source in BUILTIN_SOURCES:
            builtin[row[1 : key_end + 1]] = Stored(row[0], row[key_end + 1 :])
        else:
            key = PredictionKey._make(row[1:key_end])
            external[key][source] = (row[0], PredictionValues._make(row[key_end + 1 :]))
    return StoredPredictions(builtin, external)


def write_predictions(
    session: Session,
    wanted: dict[tuple[Any, ...], PredictionValues],
    stored: dict[tuple[Any, ...], Stored],
    now: datetime,
) -> Synced:
    """The built-in predictions wanted, by (PredictionKey fields..., source), written where new or
    changed; created_at says when the numbers were computed, so unchanged ones keep theirs."""
    return sync_rows(
        session, Prediction, PREDICTION_ROW_KEY, PREDICTION_VALUES, wanted, stored, {"created_at": now}
    )


def stored_gaps(session: Session, benchmark_ids: list[int]) -> dict[tuple[Any, ...], Stored]:
    """(benchmark, prediction) -> the stored gap's id and values."""
    # diagnoses are compared as the JSON text stored, not decoded row by row
    columns = [
        type_coerce(Gap.__table__.c[name], Text).label(name) if name == "diagnoses" else Gap.__table__.c[name]
        for name in GAP_VALUES
    ]
    # plain tuples sliced in C: they compare equal to the GapValues they are compared with
    return {
        row[1:3]: Stored(row[0], row[3:])
        for row in select_in(
            session,
            select(Gap.id, Gap.benchmark_id, Gap.prediction_id, *columns),
            Gap.benchmark_id,
            benchmark_ids,
        )
    }


def write_gaps(
    session: Session,
    wanted: Mapping[tuple[Any, ...], GapValues],
    stored: dict[tuple[Any, ...], Stored],
    now: datetime,
) -> Synced:
    """The gaps wanted, by (benchmark, prediction), written where new or changed; the new ones counted
    in their sources' parity counts (db/parity_counts.py)."""
    above_id = session.connection().scalar(select(func.max(Gap.id))) or 0
    synced = sync_rows(session, Gap, GAP_KEY, GAP_VALUES, wanted, stored, {"updated_at": now}, ("diagnoses",))
    if synced.inserted:
        parity_counts.gaps_inserted(session, above_id)
    return synced


def stored_alerts(session: Session, benchmark_ids: list[int]) -> dict[tuple[Any, ...], Stored]:
    """(benchmark,) -> its stored alert (its id is the benchmark's), values as AlertValues. No joins: this
    runs over every benchmark on a full refresh."""
    query = select(Alert.benchmark_id, *(Alert.__table__.c[name] for name in ALERT_VALUES))
    make = AlertValues._make
    return {
        (row[0],): Stored(row[0], make(row[1:]))
        for row in select_in(session, query, Alert.benchmark_id, benchmark_ids)
    }


def write_alerts(
    session: Session,
    wanted: dict[tuple[Any, ...], AlertValues],
    stored: dict[tuple[Any, ...], Stored],
    events: list[tuple[int, str, str, str | None]],
    who: str,
    now: datetime,
) -> None:
    """The alerts wanted, by (benchmark,), written where new or changed, and the history entries of those
    whose status moved: (benchmark, from status, to status, note)."""
    sync_rows(session, Alert, ("benchmark_id",), ALERT_VALUES, wanted, stored, {"updated_at": now})
    insert_rows(
        session,
        AlertEvent,
        [
            dict(benchmark_id=benchmark_id, at=now, who=who, from_status=old, to_status=new, note=note)
            for benchmark_id, old, new, note in events
        ],
    )
