"""Bulk writing of training metric points: cached key ids, chunked driver-level executemany.

A training log holds millions of points; ORM objects per point would cost far more than the insert
itself. Each logged step becomes one multi-row INSERT (one row per key) whose parameters are a copy
of a per-key-set template with the step and values slotted in: fewer statements for the database to
run and almost no Python work per point."""

from collections import defaultdict

from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from specdash.db.models import MetricKey, MetricPoint

FLUSH_ROWS = 50_000
MAX_KEY_CHARS = 200
MAX_TEMPLATES = 10_000
MAX_ROWS_PER_STATEMENT = 200  # 800 parameters: under SQLite's oldest limit of 999


def _statement(session: Session, rows: int) -> str | None:
    """INSERT of `rows` points that skips points already stored, for this database; None if unknown."""
    dialect = session.get_bind().dialect
    mark = {"qmark": "?", "format": "%s", "pyformat": "%s"}.get(dialect.paramstyle)
    if mark is None or dialect.name not in ("sqlite", "postgresql"):
        return None
    values = ", ".join([f"({mark}, {mark}, {mark}, {mark})"] * rows)
    if dialect.name == "sqlite":
        return f"INSERT OR IGNORE INTO metric_point (run_id, key_id, step, value) VALUES {values}"
    return f"INSERT INTO metric_point (run_id, key_id, step, value) VALUES {values} ON CONFLICT DO NOTHING"


class MetricPointWriter:
    """Buffers points and inserts them in chunks; a point already stored wins."""

    def __init__(self, session: Session):
        self.session = session
        self._keys: dict[str, int] = {}
        # per (run, key set): the parameter template [run, key, step, value, run, key, ...]
        self._templates: dict[tuple[int, tuple[str, ...]], list] = {}
        self._pending: dict[int, list[list]] = defaultdict(list)  # rows per statement -> parameter lists
        self._pending_rows = 0
        self._portable = _statement(session, 1) is None
        self.run_ids: set[int] = set()
        self.written = 0  # rows the database stored
        self.offered = 0  # rows offered to it, including points it already held

    def key_id(self, name: str) -> int:
        key_id = self._keys.get(name)
        if key_id is None:
            key_id = self.session.scalar(select(MetricKey.id).where(MetricKey.name == name))
            if key_id is None:
                row = MetricKey(name=name)
                self.session.add(row)
                self.session.flush()
                key_id = row.id
            self._keys[name] = key_id
        return key_id

    def _template(self, run_id: int, names: tuple[str, ...]) -> list:
        if len(self._templates) >= MAX_TEMPLATES:  # bounded memory whatever the file holds
            self._templates.clear()
        template = []
        for name in names:
            template += [run_id, self.key_id(name), None, None]
        self._templates[(run_id, names)] = template
        return template

    def add(self, run_id: int, steps: list[tuple[int, tuple[str, ...], list[float]]]) -> None:
        """Points of one run: (step, keys, values) per logged step."""
        self.run_ids.add(run_id)
        templates, pending = self._templates, self._pending
        for step, names, values in steps:
            count = len(names)
            if not count:
                continue
            template = templates.get((run_id, names)) or self._template(run_id, names)
            for start in range(0, count, MAX_ROWS_PER_STATEMENT):  # one pass for all but huge key sets
                stop = min(count, start + MAX_ROWS_PER_STATEMENT)
                params = template[4 * start : 4 * stop]
                params[2::4] = [step] * (stop - start)
                params[3::4] = values[start:stop]
                pending[stop - start].append(params)
            self._pending_rows += count
        if self._pending_rows >= FLUSH_ROWS:
            self.flush()

    def flush(self) -> int:
        """Write the buffered points; returns how many were offered."""
        pending, self._pending = self._pending, defaultdict(list)
        offered, self._pending_rows = self._pending_rows, 0
        stored = 0
        for rows, params in pending.items():
            if self._portable:  # another database: SQLAlchemy's portable insert (stored points not skipped)
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
            # The driver's own executemany, on this transaction's connection: parameter lists as they are.
            cursor = self.session.connection().connection.cursor()
            try:
                cursor.executemany(_statement(self.session, rows), params)
                # rows the database inserted: points it already held are not counted as stored
                stored += cursor.rowcount if cursor.rowcount >= 0 else rows * len(params)
            finally:
                cursor.close()
        self.written += stored
        self.offered += offered
        return offered
