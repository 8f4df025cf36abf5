"""Each deployment's load model fit as stored (db/loadmodels.py keeps it): derived from its speculative
benchmarks, kept with a key of the data it was fitted on so that a refresh fits again only when that data
changes materially."""

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, DateTime, ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from specdash.db.models import Base, utcnow


class LoadFit(Base):
    """A deployment's load model fitted to its speculative benchmarks (the estimated no-speculation
    baselines of a deployment measured only with speculation, db/loadmodels.py), kept with a key of the
    data it was fitted on: later refreshes reuse it until that data changes materially."""

    __tablename__ = "load_fit"

    deployment_id: Mapped[int] = mapped_column(
        ForeignKey("deployment.id", ondelete="CASCADE"), primary_key=True
    )
    # the fit's inputs but their counts: loads, settings, drafters and their families, what the priors
    # know of the deployment, the fit's own version (costmodel/load_observations.py fit_key)
    data_key: Mapped[str] = mapped_column(String(64))
    benchmarks: Mapped[int] = mapped_column(Integer)  # the benchmarks its observations were read from
    estimate: Mapped[dict[str, Any]] = mapped_column(JSON)  # levels, rule and the fitted model
    fitted_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    # the last check that the fit holds (revision 0019; none yet: the next refresh checks in full): the
    # store's largest benchmark id then, how many benchmarks the data held, and its shape (LoadShape)
    checked_through: Mapped[int | None] = mapped_column(Integer)
    checked_benchmarks: Mapped[int | None] = mapped_column(Integer)
    shape: Mapped[dict[str, Any] | None] = mapped_column(JSON)
