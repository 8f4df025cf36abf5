"""Summary rows the writes keep for what the Overview aggregates over the whole store: how many benchmarks
each prediction source judges (db/parity_counts.py) and each run's checkpoints with its latest one
(db/run_checkpoints.py), so the page reads a few rows instead of counting or ranking every row."""

from sqlalchemy import ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from specdash.db.models import Base


class ParityCount(Base):
    """How many gaps a prediction source has on benchmarks that are not superseded: the benchmarks the
    parity plot of that source stands for. Only sources with at least one such gap have a row."""

    __tablename__ = "parity_count"

    source: Mapped[str] = mapped_column(String(100), primary_key=True)
    benchmarks: Mapped[int] = mapped_column(Integer)


class RunCheckpoints(Base):
    """A run's checkpoints in summary: how many, the latest (highest step, else the newest stored) and the
    newest stored (the highest id: which runs moved last). Only runs with a checkpoint have a row."""

    __tablename__ = "run_checkpoints"

    run_id: Mapped[int] = mapped_column(ForeignKey("run.id", ondelete="CASCADE"), primary_key=True)
    checkpoints: Mapped[int] = mapped_column(Integer)
    latest_checkpoint_id: Mapped[int] = mapped_column(ForeignKey("checkpoint.id", ondelete="CASCADE"))
    newest_checkpoint_id: Mapped[int] = mapped_column(Integer)
