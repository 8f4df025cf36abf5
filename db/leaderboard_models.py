"""The Leaderboard's entries as stored (db/leaderboard_entries.py keeps them): derived from the benchmarks, their
predictions and baselines, written by every refresh of what they depend on, so the page reads a ranking
instead of computing one from every benchmark."""

from sqlalchemy import Boolean, Float, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from specdash.db.models import Base


class LeaderboardEntry(Base):
    """A (checkpoint, deployment, load) at its best setting for one view of the Leaderboard: a prediction
    source, one dataset or across datasets (`across`, dataset ''), ranked by measured or predicted
    speedup. Names, archived runs and open alerts are read with the entries, not stored."""

    __tablename__ = "leaderboard_entry"
    __table_args__ = (
        # a view's entries, read together
        Index("ix_leaderboard_entry_view", "source", "rank_by", "across", "dataset"),
        # a checkpoint's entries, rewritten together, whole or at some deployments and loads (the primary
        # key leads with the source)
        Index("ix_leaderboard_entry_checkpoint", "checkpoint_id", "source", "deployment_id", "concurrency"),
    )

    source: Mapped[str] = mapped_column(String(100), primary_key=True)
    across: Mapped[bool] = mapped_column(Boolean, primary_key=True)
    dataset: Mapped[str] = mapped_column(String(200), primary_key=True)
    rank_by: Mapped[str] = mapped_column(String(20), primary_key=True)
    checkpoint_id: Mapped[int] = mapped_column(
        ForeignKey("checkpoint.id", ondelete="CASCADE"), primary_key=True
    )
    deployment_id: Mapped[int] = mapped_column(
        ForeignKey("deployment.id", ondelete="CASCADE"), primary_key=True
    )
    concurrency: Mapped[int] = mapped_column(Integer, primary_key=True)
    speculative_algorithm: Mapped[str | None] = mapped_column(String(40))
    num_steps: Mapped[int | None] = mapped_column(Integer)
    topk: Mapped[int | None] = mapped_column(Integer)
    num_draft_tokens: Mapped[int | None] = mapped_column(Integer)
    measured_speedup: Mapped[float | None] = mapped_column(Float)
    predicted_speedup: Mapped[float | None] = mapped_column(Float)
    measured_tps: Mapped[float | None] = mapped_column(Float)
    predicted_tps: Mapped[float | None] = mapped_column(Float)
    baseline_tps: Mapped[float | None] = mapped_column(Float)
    error_band: Mapped[float | None] = mapped_column(Float)
    datasets: Mapped[int] = mapped_column(Integer)
    benchmarks: Mapped[int] = mapped_column(Integer)
