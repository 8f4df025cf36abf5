"""What is stored, table by table, with names resolved instead of ids: the other direction of ingest.

Rows stream from the database (a metrics table may hold millions) to JSON (an array of objects) or
CSV (a header and a row per object)."""

import csv
import json
import math
from collections.abc import Iterator
from datetime import datetime
from typing import Any, TextIO

from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

from specdash.db.acceptance import checkpoint_rates
from specdash.db.checkpoints import CHECKPOINT_COLUMNS
from specdash.db.gap_joins import NAMES, with_gap_joins
from specdash.db.models import (
    Alert,
    Benchmark,
    Checkpoint,
    Deployment,
    Gap,
    IngestedFile,
    MetricKey,
    MetricPoint,
    ParameterSet,
    Prediction,
    Run,
)
from specdash.db.repeats import repeat_columns
from specdash.ingest.csvtext import spreadsheet_safe

STREAM_ROWS = 10_000


def _runs(run: str | None) -> Select:
    query = select(
        Run.name,
        Run.framework,
        Run.target_model,
        Run.speculative_algorithm,
        Run.ttt_length,
        Run.hidden_size,
        Run.data_size,
        Run.status,
        Run.started_at,
        Run.ended_at,
        Run.notes,
        Run.is_demo,
        Run.config,
        select(func.count(Checkpoint.id))
        .where(Checkpoint.run_id == Run.id)
        .scalar_subquery()
        .label("checkpoints"),
    ).order_by(Run.name)
    return query.where(Run.name == run) if run else query


def _checkpoints(run: str | None) -> Select:
    query = (
        select(*CHECKPOINT_COLUMNS).join(Checkpoint.run).order_by(Run.name, Checkpoint.step, Checkpoint.name)
    )
    return query.where(Run.name == run) if run else query


def _deployments(run: str | None) -> Select:
    columns = [c for c in Deployment.__table__.columns if c.name != "id"]
    return select(*columns).order_by(Deployment.name)


BENCHMARK_COLUMNS = (
    "speculative_algorithm",
    "num_steps",
    "topk",
    "num_draft_tokens",
    "concurrency",
    "concurrency_source",
    "dataset",
    "num_prompts",
    "input_tokens",  # mean per request
    "output_tokens",
    "decode_tps",
    "output_throughput",
    "accept_length",
    "position_survival",
    "median_tpot_ms",
    "p99_tpot_ms",
    "median_ttft_ms",
    "p99_ttft_ms",
    "median_itl_ms",
    "p99_itl_ms",
    "request_rate",
    "decode_tps_p10",
    "decode_tps_p90",
    "interval_count",
    "engine",
    "engine_version",
    "drafter_path",
    "draft_hidden_size",
    "label",
    "measured_at",
    "source_format",
)


def _benchmarks(run: str | None) -> Select:
    group = repeat_columns()  # db/repeats.py: one setting at one load, dataset and context
    query = (
        select(
            Benchmark.id,
            *NAMES,
            *(getattr(Benchmark, name) for name in BENCHMARK_COLUMNS),
            func.count().over(partition_by=group).label("repeats"),
            func.avg(Benchmark.decode_tps).over(partition_by=group).label("repeat_mean_tps"),
            IngestedFile.path.label("source_file"),
            Benchmark.created_at,
            Benchmark.raw,
        )
        .join(Deployment, Benchmark.deployment_id == Deployment.id)
        .outerjoin(Checkpoint, Benchmark.checkpoint_id == Checkpoint.id)
        .outerjoin(Checkpoint.run)
        .outerjoin(IngestedFile, Benchmark.ingested_file_id == IngestedFile.id)
        .order_by(Benchmark.id)
    )
    return query.where(Run.name == run) if run else query


def _predictions(run: str | None) -> Select:
    query = (
        select(
            Prediction.id,
            *NAMES,
            Prediction.source,
            ParameterSet.version.label("parameter_set"),
            Prediction.num_steps,
            Prediction.topk,
            Prediction.num_draft_tokens,
            Prediction.concurrency,
            Prediction.dataset,
            Prediction.predicted_tps,
            Prediction.accept_length,
            Prediction.accept_length_source,
            Prediction.round_ms,
            Prediction.compute_ms,
            Prediction.comm_ms,
            Prediction.draft_ms,
            Prediction.overhead_ms,
            Prediction.baseline_tps,
            Prediction.extrapolated,
            Prediction.approximation,
            Prediction.error_band,
        )
        .join(Checkpoint, Prediction.checkpoint_id == Checkpoint.id)
        .join(Checkpoint.run)
        .join(Deployment, Prediction.deployment_id == Deployment.id)
        .outerjoin(ParameterSet, Prediction.parameter_set_id == ParameterSet.id)
        .order_by(Prediction.id)
    )
    return query.where(Run.name == run) if run else query


def _gaps(run: str | None) -> Select:
    query = with_gap_joins(
        select(
            Gap.id,
            Gap.benchmark_id,
            *NAMES,
            Prediction.source,
            Gap.gap,
            Gap.measured_tps,
            Gap.predicted_tps,
            Gap.measured_round_ms,
            Gap.predicted_round_ms,
            Gap.acceptance_factor,
            Gap.round_factor,
            Gap.unexplained_ms,
            Gap.severity,
            Alert.status,
            Alert.note,
            Gap.diagnoses,
            (Alert.gap_id == Gap.id).label("verdict"),
            Alert.is_alert,
        )
    ).order_by(Gap.id)
    return query.where(Run.name == run) if run else query


def _metrics(run: str | None) -> Select:
    query = (
        select(Run.name.label("run"), MetricKey.name.label("key"), MetricPoint.step, MetricPoint.value)
        .join(Run, MetricPoint.run_id == Run.id)
        .join(MetricKey, MetricPoint.key_id == MetricKey.id)
        .order_by(Run.name, MetricKey.name, MetricPoint.step)
    )
    return query.where(Run.name == run) if run else query


TABLES = {
    "runs": _runs,
    "checkpoints": _checkpoints,
    "deployments": _deployments,
    "benchmarks": _benchmarks,
    "predictions": _predictions,
    "gaps": _gaps,
    "metrics": _metrics,
}


def _plain(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def rows(session: Session, table: str, run: str | None = None) -> tuple[list[str], Iterator[dict[str, Any]]]:
    """The column names and the stored rows of a table as plain dicts, streamed."""
    result = session.execute(TABLES[table](run).execution_options(yield_per=STREAM_ROWS))
    columns = list(result.keys())
    acceptance: dict[int, list[float]] = {}
    if table == "checkpoints":
        columns = [c for c in columns if c != "id"] + ["acceptance"]
        acceptance = {key: list(rates) for key, rates in checkpoint_rates(session, None).items()}

    def records() -> Iterator[dict[str, Any]]:
        names = list(result.keys())
        for row in result:
            record = {name: _plain(value) for name, value in zip(names, row, strict=True)}
            if table == "checkpoints":
                record["acceptance"] = acceptance.get(record.pop("id"))
            elif table == "gaps":
                record["diagnoses"] = [d["code"] for d in record["diagnoses"] or []]
            yield record

    return columns, records()


def write_json(records: Iterator[dict[str, Any]], out: TextIO) -> int:
    count = 0
    out.write("[")
    for record in records:
        out.write(",\n" if count else "\n")
        out.write(json.dumps(record, default=str))
        count += 1
    out.write("\n]\n" if count else "]\n")
    return count


def write_csv(columns: list[str], records: Iterator[dict[str, Any]], out: TextIO) -> int:
    writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    count = 0
    for record in records:
        writer.writerow(
            {
                k: spreadsheet_safe(json.dumps(v) if isinstance(v, list | dict) else v)
                for k, v in record.items()
            }
        )
        count += 1
    return count
