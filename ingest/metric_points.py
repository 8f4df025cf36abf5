"""Bulk writing of training metric points: cached key ids, chunked driver-level executemany.

A training log holds millions of points; ORM objects per point would cost far more than the insert
itself. Logged steps are buffered by key set as columns (their steps, their values); a flush sends each
key's points as multi-row INSERTs of 200 rows, their parameters slotted into a list by slice assignment:
few statements for the database to run, almost no Python work per point, and each statement's rows
neighbours in the primary key (run, key, step). After the points, each flush adds their sums to the keys'
kept rollups (db/rollups.py), from the same columns."""

from collections.abc import Iterable, Iterator, Sequence
from itertools import groupby
from operator import itemgetter
from typing import Any, NamedTuple

from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from specdash.db import rollups
from specdash.db.bulk import select_in
from specdash.db.models import MetricKey, MetricPoint

# Points buffered before a flush (about 16 MB). Each flush appends every key's points where that key's
# range ends in the index: the first of a new run at the index's end, the later ones inside it, where
# SQLite splits pages; fewer, larger flushes split fewer (500,000 rather than 50,000: a million-point log
# has half its points appended, 3-5 % less CPU, for 16 MB more at its peak).
FLUSH_ROWS = 500_000
MAX_KEY_CHARS = 200
MAX_TEMPLATES = 10_000
MAX_ROWS_PER_STATEMENT = 200  # 800 parameters: under SQLite's oldest limit of 999


def _mark(session: Session) -> str | None:
    """The driver's parameter placeholder on SQLite or PostgreSQL, the databases the bulk statements are
    written for; None on another."""
    dialect = session.get_bind().dialect
    if dialect.name not in ("sqlite", "postgresql"):
        return None
    return {"qmark": "?", "format": "%s", "pyformat": "%s"}.get(dialect.paramstyle)


def _statement(session: Session, rows: int) -> str | None:
    """INSERT of `rows` points that skips points already stored, for this database; None if unknown."""
    dialect = session.get_bind().dialect
    mark = _mark(session)
    if mark is None:
        return None
    values = ", ".join([f"({mark}, {mark}, {mark}, {mark})"] * rows)
    if dialect.name == "sqlite":
        return f"INSERT OR IGNORE INTO metric_point (run_id, key_id, step, value) VALUES {values}"
    return f"INSERT INTO metric_point (run_id, key_id, step, value) VALUES {values} ON CONFLICT DO NOTHING"


class Pending(NamedTuple):
    """A key set's points waiting for a flush: its key ids, and per logged step its step and values."""

    ids: tuple[int, ...]
    steps: list[int]
    values: list[Sequence[float]]


# per (run, key set) flushed: each key's values, in the key set's order
Columns = dict[tuple[int, tuple[str, ...]], list[tuple[Any, ...]]]


class MetricPointWriter:
    """Buffers points and inserts them in chunks; a point already stored wins (and, within a file, the
    first offered)."""

    def __init__(self, session: Session):
        self.session = session
        self._keys: dict[str, int] = {}
        self._key_ids: dict[tuple[str, ...], tuple[int, ...]] = {}  # a key set's ids, in its order
        # per (run, key set) offered since the last flush: its key ids, steps and values, in file order
        self._pending: dict[tuple[int, tuple[str, ...]], Pending] = {}
        self._statements: dict[int, str | None] = {}  # rows -> INSERT
        self._pending_keys: set[tuple[int, int]] = set()  # (run, key) of every pending key set
        self._pending_rows = 0
        self._portable = _mark(session) is None
        self._rollups = Rollups(session, enabled=not self._portable)
        self.run_ids: set[int] = set()
        self.written = 0  # rows the database stored
        self.offered = 0  # rows offered to it, including points it already held

    def key_ids(self, names: Sequence[str]) -> tuple[int, ...]:
        """The ids of `names`, in their order: those not known yet read in one select, and those the store
        lacks inserted together, in the order named (a log's key set costs two statements, not two a key)."""
        unknown = [name for name in dict.fromkeys(names) if name not in self._keys]
        if unknown:
            self._read_keys(unknown)
            created = [{"name": name} for name in unknown if name not in self._keys]
            if created:
                self.session.execute(insert(MetricKey), created)
                self._read_keys([row["name"] for row in created])
        return tuple(self._keys[name] for name in names)

    def _read_keys(self, names: list[str]) -> None:
        query = select(MetricKey.name, MetricKey.id)
        self._keys.update((row.name, row.id) for row in select_in(self.session, query, MetricKey.name, names))

    def _open(self, run_id: int, names: tuple[str, ...]) -> Pending:
        """The pending columns of a key set new since the last flush. Key sets pending together share no
        (run, key): the points of one key go in file order, whichever key set offered them, so the first
        offered of a point logged twice is the one stored."""
        ids = self._key_ids.get(names)
        if ids is None:
            if len(self._key_ids) >= MAX_TEMPLATES:  # bounded memory whatever the file holds
                self._key_ids.clear()
            ids = self._key_ids[names] = self.key_ids(names)
        keys = {(run_id, key_id) for key_id in ids}
        if not keys.isdisjoint(self._pending_keys):
            self.flush()
        self._pending_keys |= keys
        entry = self._pending[(run_id, names)] = Pending(ids, [], [])
        return entry

    def add(self, run_id: int, steps: Iterable[tuple[int, tuple[str, ...], Sequence[float]]]) -> None:
        """Points of one run: (step, keys, values) per logged step."""
        self.run_ids.add(run_id)
        pending = self._pending
        rows = 0
        for step, names, values in steps:
            if not names:
                continue
            entry = pending.get((run_id, names)) or self._open(run_id, names)
            entry.steps.append(step)
            entry.values.append(values)
            rows += len(names)
        self._pending_rows += rows
        if self._pending_rows >= FLUSH_ROWS:
            self.flush()

    @staticmethod
    def _chunks(
        pending: dict[tuple[int, tuple[str, ...]], Pending], columns: Columns
    ) -> Iterator[tuple[int, list]]:
        """The pending points as (rows, parameters) of multi-row statements: key by key, each key's points
        in file order. Consecutive points of one key are neighbours in the primary key, so the database
        appends to one place in its index at a time (half the cost of a step's keys spread over it)."""
        for (run_id, names), (ids, steps, _values) in pending.items():
            count = len(steps)
            for key_id, column in zip(ids, columns[(run_id, names)], strict=True):
                for start in range(0, count, MAX_ROWS_PER_STATEMENT):
                    stop = min(count, start + MAX_ROWS_PER_STATEMENT)
                    params = [run_id, key_id, None, None] * (stop - start)
                    params[2::4] = steps[start:stop]
                    params[3::4] = column[start:stop]
                    yield stop - start, params

    def flush(self) -> int:
        """Write the buffered points; returns how many were offered."""
        # emptied in place: add() holds the dict while a new key set's overlap flushes it
        pending = self._pending.copy()
        self._pending.clear()
        self._pending_keys = set()
        offered, self._pending_rows = self._pending_rows, 0
        self._rollups.decide(pending)
        # each key's values, for its statements and its rollups alike (a key set's steps transposed once)
        columns = {entry: list(zip(*values, strict=True)) for entry, (_, _, values) in pending.items()}
        stored = 0
        # consecutive statements of one size go in one executemany: the order points are offered is kept
        for rows, group in groupby(self._chunks(pending, columns), key=itemgetter(0)):
            statements = map(itemgetter(1), group)  # each statement's parameters, made as they are sent
            if self._portable:  # another database: SQLAlchemy's portable insert (stored points not skipped)
                params = list(statements)
                self.session.execute(
                    insert(MetricPoint),
                    [
                        dict(run_id=p[i], key_id=p[i + 1], step=p[i + 2], value=p[i + 3])
                        for p in params
                        for i in range(0, len(p), 4)
                    ],
                )
                stored += rows * len(params)
                continue
            stored += self._execute(rows, statements)
        self._rollups.merge(pending, columns, exact=stored == offered)
        self.written += stored
        self.offered += offered
        return offered

    def _execute(self, rows: int, params: Iterable[list]) -> int:
        """The driver's own executemany, on this transaction's connection: parameter lists as they come,
        never all held at once (a flush's would be 16 MB); returns the rows the database inserted (points
        it already held are not counted as stored)."""
        statements = [0]

        def counted() -> Iterator[list]:
            for one in params:
                statements[0] += 1
                yield one

        # sqlite3's and psycopg's executemany take any iterable (the DB-API's type says a sequence)
        cursor: Any = self.session.connection().connection.cursor()
        try:
            if rows not in self._statements:
                self._statements[rows] = _statement(self.session, rows)
            cursor.executemany(self._statements[rows], counted())
            return cursor.rowcount if cursor.rowcount >= 0 else rows * statements[0]
        finally:
            cursor.close()


class Rollups:
    """The rollups a writer keeps up to date. Before a flush: which widths each (run, key) keeps, and which
    are still to be decided (db/rollups.py: a key without a rollup and with at most DECIDE_POINTS points
    stored). After it: the flushed points' sums added to the kept rollups (or, when the store already held
    some of those points, their buckets recomputed from the store), and each key still to be decided given
    the rollups its stored points now pay for, built from them."""

    def __init__(self, session: Session, enabled: bool):
        self.session = session
        self.enabled = enabled  # SQLite and PostgreSQL; another database keeps no rollups
        self._widths: dict[tuple[int, int], tuple[int, ...]] = {}  # (run, key) -> kept widths, for good
        self._open: set[tuple[int, int]] = set()  # (run, key) to decide after this flush
        self._fresh: set[tuple[int, int]] = set()  # of those, the ones without a point stored before it
        self._statement: str | None = None

    def decide(self, pending: dict[tuple[int, tuple[str, ...]], Pending]) -> None:
        """Before a flush's points are stored: the kept widths of each (run, key) not known yet."""
        self._open, self._fresh = set(), set()
        if not self.enabled:
            return
        undecided = [
            (run_id, key_id)
            for (run_id, _), entry in pending.items()
            for key_id in entry.ids
            if (run_id, key_id) not in self._widths
        ]
        kept, stored_some = self._stored(undecided)
        for run_id, key_id in undecided:
            widths = kept.get((run_id, key_id), ())
            stored = 0
            if not widths and (run_id, key_id) in stored_some:
                stored = rollups.stored_count(self.session, run_id, key_id)
            if widths or stored > rollups.DECIDE_POINTS:
                self._widths[(run_id, key_id)] = widths
            else:
                self._open.add((run_id, key_id))
                if not stored:
                    self._fresh.add((run_id, key_id))

    def _stored(self, pairs: list[tuple[int, int]]) -> tuple[dict[tuple[int, int], tuple[int, ...]], set]:
        """What the store holds for these (run, key) pairs, a few statements for all of them: the widths
        each keeps, and which have a point stored (only those are counted, one by one)."""
        by_run: dict[int, list[int]] = {}
        for run_id, key_id in pairs:
            by_run.setdefault(run_id, []).append(key_id)
        kept: dict[tuple[int, int], tuple[int, ...]] = {}
        stored_some: set[tuple[int, int]] = set()
        for run_id, key_ids in by_run.items():
            widths = rollups.kept_widths_of(self.session, run_id, key_ids)
            kept.update(((run_id, key_id), kept_widths) for key_id, kept_widths in widths.items())
            keeping_none = [key_id for key_id in key_ids if key_id not in widths]
            stored_some.update(
                (run_id, key_id) for key_id in rollups.with_points(self.session, run_id, keeping_none)
            )
        return kept, stored_some

    def merge(
        self, pending: dict[tuple[int, tuple[str, ...]], Pending], columns: Columns, exact: bool
    ) -> None:
        """After the flush stored the points of `pending` (each key's values in `columns`): their sums into
        the kept rollups when every point offered was stored (`exact`), else the buckets they touch
        recomputed from the store."""
        if exact:
            self._decide_fresh(pending)
        for run_id, key_id in self._open:
            widths = rollups.start(self.session, run_id, key_id)
            if widths or not rollups.undecided(self.session, run_id, key_id):
                self._widths[(run_id, key_id)] = widths
        rows: list[tuple] = []
        for (run_id, names), (ids, steps, _values) in pending.items():
            keys = [
                (i, key_id)
                for i, key_id in enumerate(ids)
                if (run_id, key_id) not in self._open and self._widths.get((run_id, key_id))
            ]
            if keys and steps:
                rows += self._sums(run_id, keys, steps, columns[(run_id, names)], exact)
        self._open = set()
        if rows:
            self._upsert(rows)

    def _decide_fresh(self, pending: dict[tuple[int, tuple[str, ...]], Pending]) -> None:
        """The keys whose stored points are all this flush's (every one offered stored) decided from the
        flushed steps, not read back: their rollups are then these points' sums, merged like any other."""
        for (run_id, _names), (ids, steps, _values) in pending.items():
            fresh = [key_id for key_id in ids if (run_id, key_id) in self._fresh]
            if not fresh or not steps:
                continue
            widths = rollups.paid_widths(len(steps), min(steps), max(steps))
            for key_id in fresh:
                self._open.discard((run_id, key_id))
                if widths or len(steps) > rollups.DECIDE_POINTS:
                    self._widths[(run_id, key_id)] = widths
        self._fresh = set()

    def _sums(
        self, run_id: int, keys: list[tuple[int, int]], steps: list[int], columns: list, exact: bool
    ) -> list:
        """The rollup rows of one key set's flushed points for its kept `keys` (position, key id; the
        position's values in `columns`); when not `exact`, their buckets recomputed from the store instead
        (no rows)."""
        ordered = sorted(steps)  # a run of ascending steps, as logs hold them, sorts in one pass
        if ordered != steps:  # a key set logged out of step order: its values in step order too
            order = sorted(range(len(steps)), key=steps.__getitem__)
            steps, columns = ordered, [[column[i] for i in order] for column in columns]
        if steps[0] < 0:  # buckets of steps below 0 are not kept: the pairs go back to their points
            rollups.drop(self.session, [(run_id, key_id) for _, key_id in keys])
            self._widths.update({(run_id, key_id): () for _, key_id in keys})
            return []
        rows: list[tuple] = []
        for width in rollups.WIDTHS:
            using = [(i, key_id) for i, key_id in keys if width in self._widths[(run_id, key_id)]]
            if not using:
                continue
            if not exact:
                for _, key_id in using:
                    rollups.rebuild(
                        self.session, run_id, key_id, width, (steps[0] // width, steps[-1] // width)
                    )
                continue
            buckets = rollups.bounds(steps, width)
            for i, key_id in using:
                rows += rollups.sums(run_id, key_id, width, buckets, columns[i])
        return rows

    def _upsert(self, rows: list[tuple]) -> None:
        if self._statement is None:
            mark = _mark(self.session)
            assert mark is not None  # rollups are enabled only where the bulk statements run
            self._statement = rollups.upsert_statement(self.session.get_bind().dialect.name, mark)
        cursor = self.session.connection().connection.cursor()
        try:
            cursor.executemany(self._statement, rows)
        finally:
            cursor.close()
