"""The gaps of benchmarks as the ingest report shows them (the refresh's reads and writes of gap rows are
db/stored.py)."""

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from specdash.db.bulk import chunks
from specdash.db.models import Gap


def benchmark_gap_rows(session: Session, benchmark_ids: list[int]) -> list[dict[str, Any]]:
    """Each gap of these benchmarks, in benchmark order: its numbers, severity and diagnosis codes."""
    rows = [
        row
        for chunk in chunks(benchmark_ids)
        for row in session.execute(
            select(
                Gap.benchmark_id, Gap.gap, Gap.measured_tps, Gap.predicted_tps, Gap.severity, Gap.diagnoses
            )
            .where(Gap.benchmark_id.in_(chunk))
            .order_by(Gap.benchmark_id)
        )
    ]
    return [
        dict(
            benchmark_id=b,
            gap=g,
            measured_tps=m,
            predicted_tps=p,
            severity=s,
            diagnoses=[d["code"] for d in (diag or [])],
        )
        for b, g, m, p, s, diag in rows
    ]
