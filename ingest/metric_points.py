"""Bulk writing of training metric points: cached key ids, chunked driver-level executemany.

A training log holds millions of points; ORM objects per point would cost far more than the insert
itself, so rows go to the driver as plain tuples in chunks."""

import re

from sqlalchemy import func, insert, select
from sqlalchemy.orm import Session

from specdash.db.models import MetricKey, MetricPoint

FLUSH_ROWS = 50_000
MAX_KEY_CHARS = 200
_ACC_KEY = re.compile(r"^train/acc_(\d+)$")


def _insert_sql(session: Session) -> str | None:
    dialect = session.bind.dialect
    mark = {"qmark": "?", "format": "%s", "pyformat": "%s"}.get(dialect.paramstyle)
    if mark is None:
        return None
    columns = "INSERT {} INTO metric_point (run_id, key_id, step, value) VALUES ({})"
    values = ", ".join([mark] * 4)
    if dialect.name == "sqlite":
        return columns.format("OR IGNORE", values)
    if dialect.name == "postgresql":
        return columns.format("", values) + " ON CONFLICT DO NOTHING"
    return None


class MetricPointWriter:
    """Buffers (run, key, step, value) rows and inserts them in chunks; a point already stored wins."""

    def __init__(self, session: Session):
        self.session = session
        self._keys: dict[str, int] = {}
        self._rows: list[tuple[int, int, int, float]] = []
        self._sql = _insert_sql(session)
        self.run_ids: set[int] = set()

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

    def add(self, run_id: int, step: int, values: dict[str, float]) -> None:
        self.run_ids.add(run_id)
        keys = self._keys
        rows = self._rows
        for name, value in values.items():
            key_id = keys.get(name)
            if key_id is None:
                key_id = self.key_id(name)
            rows.append((run_id, key_id, step, value))
        if len(rows) >= FLUSH_ROWS:
            self.flush()

    def flush(self) -> int:
        """Write the buffered rows; returns how many were offered."""
        rows, self._rows = self._rows, []
        if not rows:
            return 0
        if self._sql is not None:
            self.session.connection().exec_driver_sql(self._sql, rows)
        else:  # another database: SQLAlchemy's portable insert (no skipping of stored points)
            self.session.execute(
                insert(MetricPoint), [dict(run_id=r, key_id=k, step=s, value=v) for r, k, s, v in rows]
            )
        return len(rows)

    def accuracies_at(self, run_id: int, step: int) -> list[float]:
        """train/acc_0, train/acc_1, ... at the last logged step <= step; positions must be contiguous."""
        keys = {
            key_id: int(match[1])
            for key_id, name in self.session.execute(
                select(MetricKey.id, MetricKey.name).where(MetricKey.name.like("train/acc\\_%", escape="\\"))
            )
            if (match := _ACC_KEY.match(name))
        }
        if not keys:
            return []
        last = (
            select(MetricPoint.key_id, func.max(MetricPoint.step).label("step"))
            .where(MetricPoint.run_id == run_id, MetricPoint.step <= step, MetricPoint.key_id.in_(keys))
            .group_by(MetricPoint.key_id)
            .subquery()
        )
        found = {
            keys[key_id]: value
            for key_id, value in self.session.execute(
                select(MetricPoint.key_id, MetricPoint.value).join(
                    last,
                    (MetricPoint.key_id == last.c.key_id) & (MetricPoint.step == last.c.step),
                ).where(MetricPoint.run_id == run_id)
            )
        }
        rates = []
        for position in range(len(found)):
            if position not in found or not 0 <= found[position] <= 1:
                break
            rates.append(found[position])
        return rates
