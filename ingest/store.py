"""Write validated records into the store inside the caller's transaction, linking names to rows."""

import hashlib
import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from specdash.costmodel.throughput import verified_tokens
from specdash.db.acceptance import accuracies_at
from specdash.db.advisories import AdvisoryChangeError, name_target_deployments
from specdash.db.bulk import chunks
from specdash.db.changes import record_change
from specdash.db.models import (
    Benchmark,
    Checkpoint,
    Deployment,
    PositionAcceptance,
    Prediction,
    Run,
    utcnow,
)
from specdash.db.parameters import ensure_theory_set
from specdash.ingest.formats.base import Located
from specdash.ingest.links import (
    LinkError,
    LinkOptions,
    meaningful_folder,
    name_from_path,
    parse_checkpoint_name,
    path_parts,
)
from specdash.ingest.metric_points import MetricPointWriter
from specdash.ingest.problems import Problem
from specdash.ingest.records import (
    OWN_HEAD_ALGORITHMS,
    SPECULATION_UNKNOWN,
    AnyRecord,
    BenchmarkRecord,
    CheckpointRecord,
    DeploymentRecord,
    MetricRows,
    MetricsRecord,
    PredictionRecord,
    RunRecord,
)

# Fields that change as a run goes on (a run in training finishes): a newer value is no conflict.
PROGRESSING = frozenset({"status", "ended_at", "notes"})
BENCHMARK_BATCH = 1000  # benchmarks per multi-row INSERT
STORE_BATCH = 1000  # records stored together: one duplicate check, one multi-row INSERT of benchmarks
MAX_LINKS_KEPT = 10_000  # where each benchmark went, kept to be listed; the counts cover every one


@dataclass
class BenchmarkLink:
    """Where one benchmark of a file went: its deployment and, unless a baseline, its checkpoint."""

    line: int | None
    deployment: str
    run: str | None = None
    checkpoint: str | None = None
    how: str = "baseline"  # baseline | by name | by path | by folder names | created from path | unlinked
    duplicate: bool = False
    label: str | None = None
    intervals: str | None = None  # a server log's benchmark: the intervals it used and left out, and why
    derived: str | None = None  # a client benchmark: which fields gave per-request decode and concurrency

    def kind(self) -> str:
        """What a summary counts it as: 'baseline', 'run/checkpoint by path', 'not linked', 'duplicate'."""
        if self.duplicate:
            return "duplicate"
        if self.how in ("baseline", "target's own head"):
            return self.how
        return f"{self.target} {self.how}" if self.run else "not linked"

    @property
    def target(self) -> str:
        return f"{self.run}/{self.checkpoint}" if self.run else "-"


@dataclass
class StoreSummary:
    records: int = 0
    created: Counter = field(default_factory=Counter)
    updated: Counter = field(default_factory=Counter)  # rows given values: filled in, or replaced
    replaced: int = 0  # stored values the file's replaced (--update), each in the change history
    duplicates: int = 0
    linked: int = 0
    unlinked: int = 0
    metric_points: int = 0  # stored
    points_kept: int = 0  # offered but already stored (same run, key and step): the stored value kept
    links: list[BenchmarkLink] = field(default_factory=list)  # the first MAX_LINKS_KEPT
    link_counts: Counter = field(default_factory=Counter)  # every benchmark, by BenchmarkLink.kind()
    benchmark_ids: list[int] = field(default_factory=list)
    derived_acceptance: int = 0  # checkpoints whose per-position acceptance came from training metrics
    acceptance_changed: int = 0  # checkpoints whose per-position acceptance was set or changed


def benchmark_record_key(record: BenchmarkRecord) -> str:
    """Identity of a measurement, whatever file it arrives in: its fields, not its raw source."""
    # how the concurrency was told is about the reading, not the measurement
    identity = record.model_dump(mode="json", exclude={"raw", "label", "kind", "concurrency_source"})
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()


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
        self._deployments: dict[str, Deployment] = {}
        self._runs: dict[str, Run] = {}
        self._checkpoints: dict[tuple[int, str], Checkpoint] = {}
        self._new_checkpoints: list[Checkpoint] = []
        self._pending_benchmarks: list[dict] = []
        self._benchmark_keys: set[str] = set()  # record keys of this file's benchmarks so far
        self._prefetched: set[str] = set()
        self._prefetched_all: set[str] = set()
        self._key_of: dict[int, str] = {}
        self._placeholders: set[int] = set()  # id() of rows created on first mention, no record's values yet
        self.points = MetricPointWriter(session)

    # --- lookups, created on first mention ---------------------------------------------------------
    def deployment(self, name: str, create: bool = True) -> Deployment | None:
        if name not in self._deployments:
            row = self.session.scalar(select(Deployment).where(Deployment.name == name))
            if row is None and create:
                row = Deployment(name=name)
                self.session.add(row)
                self._placeholders.add(id(row))
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
                self._placeholders.add(id(row))
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
                parsed = parse_checkpoint_name(name)
                row = Checkpoint(
                    run_id=run.id,
                    name=name,
                    epoch=parsed.epoch if parsed else None,
                    step=parsed.step if parsed else None,
                )
                self.session.add(row)
                self._placeholders.add(id(row))
                self.session.flush()
                self.summary.created["checkpoint"] += 1
                self._new_checkpoints.append(row)
            if row is None:
                return None
            self._checkpoints[key] = row
        return self._checkpoints[key]

    # --- records -------------------------------------------------------------------------------------
    def add(self, record: AnyRecord | MetricRows, line: int | None = None) -> None:
        handler = getattr(self, f"_add_{record.kind}")
        if record.kind == "benchmark":
            handler(record, line)
        else:
            handler(record)
        # counted once stored: a record refused for its links is not one of the file's records
        self.summary.records += len(record.steps) if record.kind == "metric_rows" else 1

    def _upsert(self, row, record, fields: set[str], kind: str) -> None:
        """Fill what the store does not know; a stored value the file contradicts is a conflict, reported
        against its field unless `update` applies the file's value."""
        changes = {}
        for name in fields:
            value = getattr(record, name)
            if name in record.model_fields_set and getattr(row, name) != value:
                changes[name] = value
        # a row this file created on first mention holds defaults, not values anyone stated: filled freely
        placeholder = id(row) in self._placeholders
        self._placeholders.discard(id(row))
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
        existed = record.name in self._deployments or self.session.scalar(
            select(Deployment.id).where(Deployment.name == record.name)
        )
        row = self.deployment(record.name)
        fields = set(DeploymentRecord.model_fields) - {"kind", "name"}
        if not existed:
            self._placeholders.discard(id(row))
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
        self.summary.acceptance_changed += 1
        for position, rate in enumerate(rates):
            checkpoint.position_acceptance.append(
                PositionAcceptance(position=position, rate=rate, source=source)
            )

    def _add_metrics(self, record: MetricsRecord) -> None:
        values = record.values
        self.points.add(self.run(record.run).id, [(record.step, tuple(values), list(values.values()))])

    def _add_metric_rows(self, record: MetricRows) -> None:
        run = self._runs.get(record.run) or self.run(record.run)
        self.points.add(run.id, record.steps)

    def resolve_checkpoint(
        self, run: str | None, checkpoint: str | None, drafter_path: str | None
    ) -> tuple[Checkpoint | None, str]:
        """By names (created when missing), then by drafter path: exact, then its folder names; a path
        nothing matches names a new run and checkpoint. Returns the checkpoint and how it was found."""
        run = self.link.run or run
        checkpoint = self.link.checkpoint or checkpoint
        if run and checkpoint:
            return self.checkpoint(self.run(run), checkpoint), "by name"
        if checkpoint and not run:
            rows = self.session.scalars(select(Checkpoint).where(Checkpoint.name == checkpoint)).all()
            if len(rows) == 1:
                return rows[0], "by name"
            raise LinkError("run", f"checkpoint '{checkpoint}' needs a run to link to")
        if not drafter_path:
            return None, "unlinked"
        found = self._match_path(drafter_path, run)
        if found is not None:
            return found
        derived = name_from_path(drafter_path)
        if derived is None:
            return None, "unlinked"
        owner = self.run(run or derived.run, create=False)
        existing = self.checkpoint(owner, derived.checkpoint, create=False) if owner is not None else None
        if existing is not None:  # e.g. a hub id whose run was stored before
            return existing, "by folder names"
        row = self.checkpoint(self.run(run or derived.run), derived.checkpoint)
        row.path = drafter_path
        return row, "created from path"

    def _match_path(self, drafter_path: str, run_name: str | None) -> tuple[Checkpoint, str] | None:
        query = select(Checkpoint).where(Checkpoint.path == drafter_path)
        if run_name:
            query = query.join(Run).where(Run.name == run_name)
        row = self.session.scalar(query.limit(1))
        if row is not None:
            return row, "by path"
        parts = path_parts(drafter_path)
        if not parts:
            return None
        parsed = parse_checkpoint_name(parts[-1])
        derived = name_from_path(drafter_path)
        if run_name:
            owners = [run_name]
        else:  # the run the parent folders name, a meaningful parent folder, the run of "{run}-stepN"
            parent = parts[-2] if len(parts) >= 2 and meaningful_folder(parts[-2]) else None
            owners = [derived.run if derived else None, parent, parsed and parsed.run]
        found = {}
        for owner in dict.fromkeys(name for name in owners if name):
            owner_run = self.run(owner, create=False)
            if owner_run is not None:
                row = self.checkpoint(owner_run, parts[-1], create=False)
                if row is not None:
                    found[row.id] = row
        if len(found) == 1:  # unambiguous only
            return next(iter(found.values())), "by folder names"
        if found:
            return None
        if not run_name:
            # a checkpoint of that name in a run whose name is a folder further up the path, if only one
            rows = self.session.scalars(
                select(Checkpoint)
                .join(Run)
                .where(
                    Checkpoint.name == parts[-1],
                    Run.name.in_([p for p in parts[:-1] if meaningful_folder(p)]),
                )
            ).all()
            if len(rows) == 1:
                return rows[0], "by folder names"
        return None

    def _add_benchmark(self, record: BenchmarkRecord, line: int | None = None) -> None:
        deployment_name = self.link.deployment or record.deployment
        key = self._key_of.pop(id(record), None) or benchmark_record_key(record)
        if key in self._benchmark_keys or self._stored_key(key):
            self.summary.duplicates += 1
            self._link(BenchmarkLink(line, deployment_name, how="duplicate", duplicate=True))
            return
        self._benchmark_keys.add(key)
        deployment = self.deployment(deployment_name)
        checkpoint, how = None, "baseline"
        algorithm = record.speculative_algorithm
        own_head = (
            algorithm in OWN_HEAD_ALGORITHMS
            and not (record.drafter_path or record.run or record.checkpoint)
            and not (self.link.run or self.link.checkpoint)
        )
        if own_head:
            how = "target's own head"  # MTP/NEXTN: the target's multi-token-prediction head, no drafter
        elif algorithm is not None:
            checkpoint, how = self.resolve_checkpoint(record.run, record.checkpoint, record.drafter_path)
            if checkpoint is None:
                self.summary.unlinked += 1
            else:
                self.summary.linked += 1
                if algorithm == SPECULATION_UNKNOWN and checkpoint.run.speculative_algorithm:
                    algorithm = checkpoint.run.speculative_algorithm  # the file does not say; the run does
        link = BenchmarkLink(line, deployment.name, how=how, label=record.label)
        summary = (record.raw or {}).get("intervals")
        if isinstance(summary, dict) and isinstance(summary.get("text"), str):
            link.intervals = summary["text"]
        derived = (record.raw or {}).get("specdash_derived")
        if isinstance(derived, dict) and (
            record.concurrency_source not in (None, "file", "log")
            or derived.get("decode_tps") != "1000 / median_tpot_ms"
            or derived.get("version")
        ):
            link.derived = (
                f"decode_tps {record.decode_tps:.4g} from {derived.get('decode_tps')}, concurrency "
                f"{record.concurrency} from {derived.get('concurrency')}"
            ) + (f" ({derived['version']})" if derived.get("version") else "")
        if checkpoint is not None:
            link.run, link.checkpoint = checkpoint.run.name, checkpoint.name
        self._link(link)
        fields = record.model_dump(exclude={"kind", "deployment", "run", "checkpoint"})
        fields["speculative_algorithm"] = algorithm
        self._pending_benchmarks.append(
            dict(
                record_key=key,
                deployment_id=deployment.id,
                checkpoint_id=checkpoint.id if checkpoint else None,
                source_format=self.source_format,
                created_at=utcnow(),
                **fields,
            )
        )
        if len(self._pending_benchmarks) >= BENCHMARK_BATCH:
            self.flush_benchmarks()

    def _link(self, link: BenchmarkLink) -> None:
        # every benchmark counts; the first MAX_LINKS_KEPT are kept to be listed (bounded memory)
        self.summary.link_counts[link.kind()] += 1
        if len(self.summary.links) < MAX_LINKS_KEPT:
            self.summary.links.append(link)

    def prefetch_keys(self, records) -> None:
        """Which of these benchmarks are stored already, in one query per CHUNK of them."""
        self._key_of = {
            id(r): benchmark_record_key(r) for r in records if getattr(r, "kind", None) == "benchmark"
        }
        keys = list(self._key_of.values())
        self._prefetched = set()
        for chunk in chunks(keys):
            self._prefetched.update(
                self.session.scalars(select(Benchmark.record_key).where(Benchmark.record_key.in_(chunk)))
            )
        self._prefetched_all = set(keys)

    def _stored_key(self, key: str) -> bool:
        if key in self._prefetched_all:
            return key in self._prefetched
        return self.session.scalar(select(Benchmark.id).where(Benchmark.record_key == key)) is not None

    def flush_benchmarks(self) -> None:
        """Insert the buffered benchmarks in one multi-row statement; their ids in the order added."""
        rows, self._pending_benchmarks = self._pending_benchmarks, []
        if not rows:
            return
        self.session.flush()
        statement = insert(Benchmark).returning(Benchmark.id, sort_by_parameter_order=True)
        ids = list(self.session.scalars(statement, rows))
        self.summary.created["benchmark"] += len(ids)
        self.summary.benchmark_ids.extend(ids)

    def _add_prediction(self, record: PredictionRecord) -> None:
        checkpoint = self.checkpoint(self.run(record.run), record.checkpoint)
        deployment = self.deployment(record.deployment)
        num_draft_tokens = verified_tokens(record.num_steps, record.topk or 1, record.num_draft_tokens)
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
        return sorted(run.id for run in self._runs.values())

    def _apply_targets(self) -> None:
        for run in self._runs.values():
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
                try:
                    name_target_deployments(self.session, run, list(self.link.target_deployments))
                except AdvisoryChangeError as exc:
                    raise LinkError("target_deployment", str(exc)) from None

    def finish(self) -> StoreSummary:
        self.flush_benchmarks()
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
        candidates = {c.id: c for c in self._new_checkpoints}
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
) -> Store:
    """Store validated records in the session's transaction, STORE_BATCH at a time (one duplicate check,
    one multi-row INSERT of benchmarks per batch); a record that cannot be linked is a problem on its line
    in `problems`, and the others are stored."""
    store = Store(session, link, fmt_name, update=update, source_name=name, change_action=action)
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
    return store


def _add_batch(store: Store, batch: list[Located], name: str, problems: list[Problem]) -> None:
    store.prefetch_keys([item.record for item in batch])  # one duplicate check for the whole batch
    for item in batch:
        try:
            store.add(item.record, item.line)
        except LinkError as exc:
            problems.append(Problem(name, item.line, exc.field, str(exc)))
