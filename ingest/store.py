"""Write validated records into the store inside the caller's transaction, linking names to rows."""

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from specdash.db.models import (
    Benchmark,
    Checkpoint,
    Deployment,
    MetricKey,
    MetricPoint,
    PositionAcceptance,
    Prediction,
    Run,
)
from specdash.db.parameters import ensure_theory_set
from specdash.ingest.records import (
    AnyRecord,
    BenchmarkRecord,
    CheckpointRecord,
    DeploymentRecord,
    MetricsRecord,
    PredictionRecord,
    RunRecord,
)

METRIC_FLUSH_ROWS = 20_000


class LinkError(ValueError):
    """A record names something that cannot be linked; reported against its field."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


@dataclass
class LinkOptions:
    """Names that override or fill in what a file says (CLI `--run/--checkpoint/--deployment`)."""

    run: str | None = None
    checkpoint: str | None = None
    deployment: str | None = None


@dataclass
class StoreSummary:
    records: int = 0
    created: Counter = field(default_factory=Counter)
    updated: Counter = field(default_factory=Counter)
    duplicates: int = 0
    linked: int = 0
    unlinked: int = 0
    metric_points: int = 0
    links: list[str] = field(default_factory=list)
    benchmark_ids: list[int] = field(default_factory=list)


def benchmark_record_key(record: BenchmarkRecord) -> str:
    """Identity of a measurement, whatever file it arrives in: its fields, not its raw source."""
    identity = record.model_dump(mode="json", exclude={"raw", "label", "kind"})
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()


def _insert_ignore(session: Session, table):
    if session.bind.dialect.name == "postgresql":
        return postgresql.insert(table).on_conflict_do_nothing()
    return sqlite.insert(table).on_conflict_do_nothing()


class Store:
    def __init__(self, session: Session, link: LinkOptions | None = None):
        self.session = session
        self.link = link or LinkOptions()
        self.summary = StoreSummary()
        self._deployments: dict[str, Deployment] = {}
        self._runs: dict[str, Run] = {}
        self._checkpoints: dict[tuple[int, str], Checkpoint] = {}
        self._keys: dict[str, int] = {}
        self._points: list[dict] = []

    # --- lookups, created on first mention ---------------------------------------------------------
    def deployment(self, name: str, create: bool = True) -> Deployment | None:
        if name not in self._deployments:
            row = self.session.scalar(select(Deployment).where(Deployment.name == name))
            if row is None and create:
                row = Deployment(name=name)
                self.session.add(row)
                self.session.flush()
                ensure_theory_set(self.session, row)
                self.summary.created["deployment"] += 1
            if row is None:
                return None
            self._deployments[name] = row
        return self._deployments[name]

    def run(self, name: str, create: bool = True) -> Run | None:
        if name not in self._runs:
            row = self.session.scalar(select(Run).where(Run.name == name))
            if row is None and create:
                row = Run(name=name)
                self.session.add(row)
                self.session.flush()
                self.summary.created["run"] += 1
            if row is None:
                return None
            self._runs[name] = row
        return self._runs[name]

    def checkpoint(self, run: Run, name: str, create: bool = True) -> Checkpoint | None:
        key = (run.id, name)
        if key not in self._checkpoints:
            row = self.session.scalar(
                select(Checkpoint).where(Checkpoint.run_id == run.id, Checkpoint.name == name)
            )
            if row is None and create:
                row = Checkpoint(run_id=run.id, name=name)
                self.session.add(row)
                self.session.flush()
                self.summary.created["checkpoint"] += 1
            if row is None:
                return None
            self._checkpoints[key] = row
        return self._checkpoints[key]

    def metric_key_id(self, name: str) -> int:
        if name not in self._keys:
            key_id = self.session.scalar(select(MetricKey.id).where(MetricKey.name == name))
            if key_id is None:
                row = MetricKey(name=name)
                self.session.add(row)
                self.session.flush()
                key_id = row.id
            self._keys[name] = key_id
        return self._keys[name]

    # --- records -------------------------------------------------------------------------------------
    def add(self, record: AnyRecord) -> None:
        self.summary.records += 1
        handler = getattr(self, f"_add_{record.kind}")
        handler(record)

    def _upsert(self, row, record, fields: set[str], kind: str) -> None:
        changed = False
        for name in fields:
            value = getattr(record, name)
            if name in record.model_fields_set and getattr(row, name) != value:
                setattr(row, name, value)
                changed = True
        if changed:
            self.summary.updated[kind] += 1

    def _add_deployment(self, record: DeploymentRecord) -> None:
        existed = record.name in self._deployments or self.session.scalar(
            select(Deployment.id).where(Deployment.name == record.name)
        )
        row = self.deployment(record.name)
        fields = set(DeploymentRecord.model_fields) - {"kind", "name"}
        if not existed:
            for name in fields:
                setattr(row, name, getattr(record, name))
        else:
            self._upsert(row, record, fields, "deployment")
        self.session.flush()
        ensure_theory_set(self.session, row)

    def _add_run(self, record: RunRecord) -> None:
        row = self.run(record.name)
        self._upsert(row, record, set(RunRecord.model_fields) - {"kind", "name"}, "run")

    def _add_checkpoint(self, record: CheckpointRecord) -> None:
        row = self.checkpoint(self.run(record.run), record.name)
        self._upsert(row, record, {"epoch", "step", "path"}, "checkpoint")
        if record.acceptance is not None:
            self.set_acceptance(row, record.acceptance, "training")

    def set_acceptance(self, checkpoint: Checkpoint, rates: list[float], source: str) -> None:
        current = [(p.position, p.rate) for p in checkpoint.position_acceptance]
        if current == list(enumerate(rates)):
            return
        checkpoint.position_acceptance.clear()
        self.session.flush()
        for position, rate in enumerate(rates):
            checkpoint.position_acceptance.append(
                PositionAcceptance(position=position, rate=rate, source=source)
            )

    def _add_metrics(self, record: MetricsRecord) -> None:
        run_id = self.run(record.run).id
        for key, value in record.values.items():
            self._points.append(
                {"run_id": run_id, "key_id": self.metric_key_id(key), "step": record.step, "value": value}
            )
        if len(self._points) >= METRIC_FLUSH_ROWS:
            self.flush_points()

    def flush_points(self) -> None:
        if self._points:
            self.session.execute(_insert_ignore(self.session, MetricPoint), self._points)
            self.summary.metric_points += len(self._points)
            self._points = []

    def resolve_checkpoint(
        self, run: str | None, checkpoint: str | None, drafter_path: str | None, field_prefix: str = ""
    ) -> Checkpoint | None:
        """By explicit names (created when missing), then by drafter path: exact, then its folder names."""
        run = self.link.run or run
        checkpoint = self.link.checkpoint or checkpoint
        if run and checkpoint:
            return self.checkpoint(self.run(run), checkpoint)
        if drafter_path:
            row = self.session.scalar(select(Checkpoint).where(Checkpoint.path == drafter_path).limit(1))
            if row is not None:
                return row
            parts = PurePosixPath(drafter_path.replace("\\", "/").rstrip("/")).parts
            if len(parts) >= 2:
                found = self.checkpoint(self.run(parts[-2], create=False) or Run(id=-1), parts[-1], False)
                if found is not None:
                    return found
            if parts:
                rows = self.session.scalars(select(Checkpoint).where(Checkpoint.name == parts[-1])).all()
                if len(rows) == 1:
                    return rows[0]
        if checkpoint and not run:
            raise LinkError(f"{field_prefix}run", f"checkpoint '{checkpoint}' needs a run to link to")
        return None

    def _add_benchmark(self, record: BenchmarkRecord) -> None:
        key = benchmark_record_key(record)
        if self.session.scalar(select(Benchmark.id).where(Benchmark.record_key == key)) is not None:
            self.summary.duplicates += 1
            return
        deployment = self.deployment(self.link.deployment or record.deployment)
        checkpoint = None
        if record.speculative_algorithm is not None:
            checkpoint = self.resolve_checkpoint(record.run, record.checkpoint, record.drafter_path)
            if checkpoint is None:
                self.summary.unlinked += 1
            else:
                self.summary.linked += 1
                self.summary.links.append(f"{checkpoint.run.name}/{checkpoint.name}")
        fields = record.model_dump(exclude={"kind", "deployment", "run", "checkpoint"})
        row = Benchmark(
            record_key=key,
            deployment_id=deployment.id,
            checkpoint_id=checkpoint.id if checkpoint else None,
            **fields,
        )
        self.session.add(row)
        self.session.flush()
        self.summary.created["benchmark"] += 1
        self.summary.benchmark_ids.append(row.id)

    def _add_prediction(self, record: PredictionRecord) -> None:
        checkpoint = self.checkpoint(self.run(record.run), record.checkpoint)
        deployment = self.deployment(record.deployment)
        num_draft_tokens = record.num_draft_tokens or record.num_steps + 1
        key = dict(
            checkpoint_id=checkpoint.id,
            deployment_id=deployment.id,
            num_steps=record.num_steps,
            topk=record.topk or 1,
            num_draft_tokens=num_draft_tokens,
            concurrency=record.concurrency,
            dataset=record.dataset or "",
            source=record.source,
        )
        row = self.session.scalar(select(Prediction).filter_by(**key))
        values = dict(
            predicted_tps=record.predicted_tps,
            accept_length=record.accept_length,
            accept_length_source="external",
            round_ms=record.round_ms,
        )
        if row is None:
            self.session.add(Prediction(**key, **values))
            self.summary.created["prediction"] += 1
        elif any(getattr(row, k) != v for k, v in values.items()):
            for k, v in values.items():
                setattr(row, k, v)
            self.summary.updated["prediction"] += 1

    def finish(self) -> StoreSummary:
        self.flush_points()
        self.session.flush()
        return self.summary
