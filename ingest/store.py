"""Write validated records into the store inside the caller's transaction: deployments, runs, checkpoints
and their acceptance, metrics, external predictions, and (ingest/benchmarks.py) benchmarks; names link
to rows (ingest/rows.py), and a value a file contradicts is a conflict unless --update applies it."""

from collections.abc import Iterable

from sqlalchemy import select
from sqlalchemy.orm import Session

from specdash.db import run_checkpoints
from specdash.db.acceptance import accuracies_at
from specdash.db.changes import record_change
from specdash.db.models import (
    Checkpoint,
    PositionAcceptance,
    Prediction,
)
from specdash.ingest.benchmarks import BenchmarkWriter
from specdash.ingest.formats.base import Located
from specdash.ingest.links import (
    LinkError,
    LinkOptions,
)
from specdash.ingest.metric_points import MetricPointWriter
from specdash.ingest.problems import Problem
from specdash.ingest.records import (
    AnyRecord,
    BenchmarkRecord,
    CheckpointRecord,
    DeploymentRecord,
    MetricRows,
    MetricsRecord,
    PredictionRecord,
    RunRecord,
)
from specdash.ingest.rows import Rows
from specdash.ingest.store_summary import StoreSummary

# Fields that change as a run goes on (a run in training finishes): a newer value is no conflict.
PROGRESSING = frozenset({"status", "ended_at", "notes"})
STORE_BATCH = 1000  # records stored together: one duplicate check, one multi-row INSERT of benchmarks


class Store:
    def __init__(
        self,
        session: Session,
        link: LinkOptions | None = None,
        source_format: str = "specdash",
        update: bool = False,
        source_name: str | None = None,
        change_action: str = "ingest --update",
    ):
        self.session = session
        self.update = update  # apply a file's values where they contradict stored ones (else a conflict)
        # each value --update applies over a stored one is a row of the change history
        self.source_name = source_name
        self.change_action = change_action
        self.link = link or LinkOptions()
        self.source_format = source_format
        self.summary = StoreSummary()
        self.rows = Rows(session, self.link, self.summary.created)
        self.benchmarks = BenchmarkWriter(session, self.rows, self.link, self.summary, source_format)
        self.points = MetricPointWriter(session)

    # --- records -------------------------------------------------------------------------------------
    def add(self, record: AnyRecord | MetricRows, line: int | None = None) -> None:
        if isinstance(record, BenchmarkRecord):
            self.benchmarks.add(record, line)
        else:
            getattr(self, f"_add_{record.kind}")(record)
        # counted once stored: a record refused for its links is not one of the file's records
        self.summary.records += len(record.steps) if isinstance(record, MetricRows) else 1

    def _upsert(self, row, record, fields: set[str], kind: str) -> None:
        """Fill what the store does not know; a stored value the file contradicts is a conflict, reported
        against its field unless `update` applies the file's value."""
        changes = {}
        for name in fields:
            value = getattr(record, name)
            if name in record.model_fields_set and getattr(row, name) != value:
                changes[name] = value
        # a row this file created on first mention holds defaults, not values anyone stated: filled freely
        placeholder = self.rows.claim(row)
        conflicts = (
            []
            if placeholder
            else [n for n in sorted(changes) if getattr(row, n) is not None and n not in PROGRESSING]
        )
        if conflicts and not self.update:
            name = conflicts[0]
            raise LinkError(
                name,
                f"{kind} '{row.name}' is stored with {name} {getattr(row, name)!r}, the file says "
                f"{changes[name]!r}; pass --update to apply the file's values",
            )
        for name in conflicts:
            self._record(kind, self._subject(row, kind), name, getattr(row, name), changes[name])
        for name, value in changes.items():
            setattr(row, name, value)
        if changes:
            self.summary.updated[kind] += 1

    def _subject(self, row, kind: str) -> str:
        if kind == "checkpoint":
            return f"{row.run.name}/{row.name}"
        return row.name

    def _record(self, kind: str, subject: str, field: str, old, new) -> None:
        note = f"from {self.source_name}" if self.source_name else None
        self.summary.replaced += 1
        record_change(self.session, self.change_action, kind, subject, field, old, new, note)

    def _add_deployment(self, record: DeploymentRecord) -> None:
        existed = self.rows.known_deployment(record.name)
        row = self.rows.deployment(record.name)
        fields = set(DeploymentRecord.model_fields) - {"kind", "name"}
        if not existed:
            self.rows.claim(row)
            for name in fields:
                setattr(row, name, getattr(record, name))
        else:
            self._upsert(row, record, fields, "deployment")
        self.session.flush()
        from specdash.db.parameters import ensure_theory_set  # the cost model loads with a deployment

        ensure_theory_set(self.session, row)

    def _add_run(self, record: RunRecord) -> None:
        row = self.rows.run(record.name)
        self._upsert(row, record, set(RunRecord.model_fields) - {"kind", "name"}, "run")

    def _add_checkpoint(self, record: CheckpointRecord) -> None:
        row = self.rows.checkpoint(self.rows.run(record.run), record.name)
        self._upsert(row, record, {"epoch", "step", "path"}, "checkpoint")
        if record.acceptance is not None:
            self.set_acceptance(row, record.acceptance, "training")

    def set_acceptance(self, checkpoint: Checkpoint, rates: list[float], source: str) -> None:
        current = [(p.position, p.rate) for p in checkpoint.position_acceptance]
        if current == list(enumerate(rates)):
            return
        checkpoint.position_acceptance.clear()
        self.session.flush()
        self.summary.acceptance_changed += 1
        for position, rate in enumerate(rates):
            checkpoint.position_acceptance.append(
                PositionAcceptance(position=position, rate=rate, source=source)
            )

    def _add_metrics(self, record: MetricsRecord) -> None:
        values = record.values
        self.points.add(self.rows.run(record.run).id, [(record.step, tuple(values), list(values.values()))])

    def _add_metric_rows(self, record: MetricRows) -> None:
        run = self.rows.runs.get(record.run) or self.rows.run(record.run)
        self.points.add(run.id, record.steps)

    def _add_prediction(self, record: PredictionRecord) -> None:
        self.benchmarks.names.prediction(record)  # what it predicts must exist: nothing created for it
        checkpoint = self.rows.checkpoint(self.rows.run(record.run), record.checkpoint)
        deployment = self.rows.deployment(record.deployment)
        setting = record.setting().stored()
        key = dict(
            checkpoint_id=checkpoint.id,
            deployment_id=deployment.id,
            num_steps=record.num_steps,
            topk=setting.topk,
            num_draft_tokens=setting.verified_tokens,
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
            if not self.update:
                name = next(k for k, v in values.items() if getattr(row, k) != v)
                raise LinkError(
                    name,
                    f"prediction '{record.source}' for {record.run}/{record.checkpoint} is stored "
                    f"with {name} {getattr(row, name)!r}, the file says {values[name]!r}; pass "
                    "--update to apply the file's values",
                )
            for k, v in values.items():
                if getattr(row, k) != v:
                    subject = f"{record.source} for {record.run}/{record.checkpoint}"
                    self._record("prediction", subject, k, getattr(row, k), v)
                setattr(row, k, v)
            self.summary.updated["prediction"] += 1

    @property
    def run_ids(self) -> list[int]:
        return sorted(run.id for run in self.rows.runs.values())

    @property
    def advisable(self) -> bool:
        """Whether a run the records named has a trained depth to advise on (db/advisories.py
        runs_to_advise), as the session holds it."""
        return any(run.ttt_length is not None for run in self.rows.runs.values())

    def _apply_targets(self) -> None:
        for run in self.rows.runs.values():
            if self.link.target and run.target_model != self.link.target:
                if run.target_model is not None:
                    note = f"from {self.source_name}" if self.source_name else None
                    record_change(
                        self.session,
                        "ingest --target",
                        "run",
                        run.name,
                        "target_model",
                        run.target_model,
                        self.link.target,
                        note,
                    )
                run.target_model = self.link.target
                self.summary.updated["run"] += 1
            if self.link.target_deployments:
                # the advisories' tables load only where a run's deployments are named
                from specdash.db.advisories import AdvisoryChangeError, name_target_deployments

                try:
                    name_target_deployments(self.session, run, list(self.link.target_deployments))
                except AdvisoryChangeError as exc:
                    raise LinkError("target_deployment", str(exc)) from None

    def finish(self) -> StoreSummary:
        self.benchmarks.finish()
        self.summary.new_names = self.benchmarks.names.new
        self._apply_targets()
        self.points.flush()
        self.summary.metric_points = self.points.written
        self.summary.points_kept = self.points.offered - self.points.written
        self.session.flush()
        self._derive_acceptance()
        self.session.flush()
        return self.summary

    def _derive_acceptance(self) -> None:
        """Checkpoints with a known step and no per-position acceptance take it from the training
        accuracies (train/acc_i) logged at the last step up to theirs."""
        candidates = {c.id: c for c in self.rows.new_checkpoints}
        for run_id in self.points.run_ids:
            for row in self.session.scalars(select(Checkpoint).where(Checkpoint.run_id == run_id)):
                candidates[row.id] = row
        for checkpoint in candidates.values():
            if checkpoint.step is None or checkpoint.position_acceptance:
                continue
            rates = accuracies_at(self.session, checkpoint.run_id, checkpoint.step)
            if rates:
                self.set_acceptance(checkpoint, rates, "training")
                self.summary.derived_acceptance += 1


def store_records(
    session: Session,
    fmt_name: str,
    name: str,
    items: Iterable[Located],
    link: LinkOptions | None,
    problems: list[Problem],
    update: bool = False,
    action: str = "ingest --update",
    ingested_file_id: int | None = None,
) -> Store:
    """Store validated records in the session's transaction, STORE_BATCH at a time (one duplicate check,
    one multi-row INSERT of benchmarks per batch); a record that cannot be linked is a problem on its line
    in `problems`, and the others are stored."""
    store = Store(session, link, fmt_name, update=update, source_name=name, change_action=action)
    # the file's row is made before its benchmarks, which are inserted with it (no UPDATE of each after)
    store.benchmarks.ingested_file_id = ingested_file_id
    batch: list[Located] = []
    for item in items:
        batch.append(item)
        if len(batch) >= STORE_BATCH:
            _add_batch(store, batch, name, problems)
            batch = []
    _add_batch(store, batch, name, problems)
    try:
        store.finish()
    except LinkError as exc:
        problems.append(Problem(name, None, exc.field, str(exc)))
    # the runs the file named: their checkpoints created or changed here, summarised for the Overview
    run_checkpoints.update(session, store.run_ids)
    return store


def _add_batch(store: Store, batch: list[Located], name: str, problems: list[Problem]) -> None:
    store.benchmarks.prefetch_keys([item.record for item in batch])  # one duplicate check for the whole batch
    for item in batch:
        try:
            store.add(item.record, item.line)
        except LinkError as exc:
            problems.append(Problem(name, item.line, exc.field, str(exc)))
