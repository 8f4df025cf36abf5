"""A file's benchmarks into the store: duplicates told apart by record key (one query per batch), each
linked to its deployment and checkpoint, inserted in multi-row statements, and where each went noted."""

import hashlib
import json
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from specdash.db.bulk import insert_keyed, insert_rows, reserved_ids, select_in
from specdash.db.models import Benchmark, Checkpoint, utcnow
from specdash.ingest.links import LinkOptions
from specdash.ingest.records import OWN_HEAD_ALGORITHMS, SPECULATION_UNKNOWN, BenchmarkRecord
from specdash.ingest.rows import Rows
from specdash.ingest.rules.names import NameGuard
from specdash.ingest.store_summary import BenchmarkLink, StoreSummary, link_kind

BENCHMARK_BATCH = 1000  # benchmarks per multi-row INSERT
MAX_LINKS_KEPT = 10_000  # where each benchmark went, kept to be listed; the counts cover every one


def benchmark_record_key(record: BenchmarkRecord) -> str:
    """Identity of a measurement, whatever file it arrives in: its fields, not its raw source."""
    # how the concurrency was told is about the reading, not the measurement; the lengths are read from
    # the raw source (kept out too), so a file stored before they were read keeps its key
    identity = record.model_dump(
        mode="json",
        exclude={"raw", "label", "kind", "concurrency_source", "input_tokens", "output_tokens"},
    )
    return hashlib.sha256(_KEY_TEXT(identity).encode()).hexdigest()


# json.dumps(identity, sort_keys=True), character for character (stored keys must not change), from one
# encoder instead of one made per call
_KEY_TEXT = json.JSONEncoder(sort_keys=True).encode


def _link_of(
    record: BenchmarkRecord, line: int | None, deployment: str, how: str, checkpoint: Checkpoint | None
) -> BenchmarkLink:
    """Where the benchmark went, with what its reading says about it: a server log's intervals, and which
    fields gave a client benchmark's per-request decode and concurrency when not the usual ones."""
    link = BenchmarkLink(line, deployment, how=how, label=record.label)
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
    return link


class BenchmarkWriter:
    """Benchmarks of one file: each linked and buffered, then inserted BENCHMARK_BATCH at a time."""

    def __init__(
        self, session: Session, rows: Rows, link: LinkOptions, summary: StoreSummary, source_format: str
    ):
        self.session = session
        self.rows = rows
        self.link = link
        self.summary = summary
        self.source_format = source_format
        self._pending: list[dict[str, Any]] = []
        self._created_at = utcnow()
        self._keys: set[str] = set()  # record keys of this file's benchmarks so far
        self._prefetched: set[str] = set()
        self._prefetched_all: set[str] = set()
        self._key_of: dict[int, str] = {}
        self._store_was_empty: bool | None = None  # no benchmark at all stored before this file
        self.names = NameGuard(session, rows, link)
        self.ingested_file_id: int | None = None  # the file's row, when it is recorded (ingest/pipeline.py)

    def add(self, record: BenchmarkRecord, line: int | None = None) -> None:
        deployment_name = self.link.deployment or record.deployment
        key = self._key_of.pop(id(record), None) or benchmark_record_key(record)
        if key in self._keys or self._stored_key(key):
            self.summary.duplicates += 1
            self._link(BenchmarkLink(line, deployment_name, how="duplicate", duplicate=True))
            return
        self.names.benchmark(record, deployment_name)  # near-twins of stored names refused first
        self._keys.add(key)
        deployment = self.rows.deployment(deployment_name)
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
            checkpoint, how = self.rows.checkpoint_of(record.run, record.checkpoint, record.drafter_path)
            if checkpoint is None:
                self.summary.unlinked += 1
            else:
                self.summary.linked += 1
                if algorithm == SPECULATION_UNKNOWN and checkpoint.run.speculative_algorithm:
                    algorithm = checkpoint.run.speculative_algorithm  # the file does not say; the run does
        if len(self.summary.links) < MAX_LINKS_KEPT:
            self._link(_link_of(record, line, deployment.name, how, checkpoint))
        else:  # past the links kept to be listed, it is counted only (a file of 300,000: no link built)
            run, name = (checkpoint.run.name, checkpoint.name) if checkpoint is not None else (None, None)
            self.summary.link_counts[link_kind(how, run, name)] += 1
        fields = record.model_dump(exclude={"kind", "deployment", "run", "checkpoint"})
        fields["speculative_algorithm"] = algorithm
        if not self._pending:  # the rows of one multi-row INSERT share when they were stored
            self._created_at = utcnow()
        self._pending.append(
            dict(
                record_key=key,
                deployment_id=deployment.id,
                checkpoint_id=checkpoint.id if checkpoint else None,
                source_format=self.source_format,
                created_at=self._created_at,
                ingested_file_id=self.ingested_file_id,
                **fields,
            )
        )
        if len(self._pending) >= BENCHMARK_BATCH:
            self.flush()

    def _link(self, link: BenchmarkLink) -> None:
        # every benchmark counts; the first MAX_LINKS_KEPT are kept to be listed (bounded memory)
        self.summary.link_counts[link.kind()] += 1
        if len(self.summary.links) < MAX_LINKS_KEPT:
            self.summary.links.append(link)

    def prefetch_keys(self, records: list[Any]) -> None:
        """Which of these benchmarks are stored already, in one query per CHUNK of them."""
        self._key_of = {
            id(r): benchmark_record_key(r) for r in records if getattr(r, "kind", None) == "benchmark"
        }
        keys = list(self._key_of.values())
        if self._store_was_empty is None:  # asked once, before this file's first benchmark goes in
            self._store_was_empty = self.session.scalar(select(Benchmark.id).limit(1)) is None
        if self._store_was_empty:  # a first load: every stored key is this file's own, in self._keys
            self._prefetched = set()
        else:
            stored = select_in(self.session, select(Benchmark.record_key), Benchmark.record_key, keys)
            self._prefetched = {key for (key,) in stored}
        self._prefetched_all = set(keys)

    def _stored_key(self, key: str) -> bool:
        if key in self._prefetched_all:
            return key in self._prefetched
        return self.session.scalar(select(Benchmark.id).where(Benchmark.record_key == key)) is not None

    def finish(self) -> None:
        """The last buffered benchmarks inserted; the file's record keys let go, as the refresh and advice
        that follow in its transaction need only the ids (300,000 keys: tens of MB)."""
        self.flush()
        self._keys, self._prefetched, self._prefetched_all, self._key_of = set(), set(), set(), {}

    def flush(self) -> None:
        """Insert the buffered benchmarks in one multi-row statement; their ids in the order added."""
        rows, self._pending = self._pending, []
        if not rows:
            return
        self.session.flush()
        ids = reserved_ids(self.session, Benchmark, len(rows))
        if ids is not None:  # PostgreSQL: the rows go in with their ids
            for row, new_id in zip(rows, ids, strict=True):
                row["id"] = new_id
            insert_rows(self.session, Benchmark, rows)
        else:
            # one executemany without RETURNING (the ORM's sorted RETURNING cost more than the insert)
            id_of = insert_keyed(self.session, Benchmark, rows, ("record_key",))
            ids = [id_of[(row["record_key"],)] for row in rows]
        self.summary.created["benchmark"] += len(ids)
        self.summary.benchmark_ids.extend(ids)
