"""Models of live training: depth advisories and their history, the deployments a run is for, the files
being followed and the webhook notifications sent."""

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from specdash.db.models import Base, Deployment, Run, utcnow


class RunDeployment(Base):
    """A deployment the user named as a run's target (besides those serving the run's target model)."""

    __tablename__ = "run_deployment"

    run_id: Mapped[int] = mapped_column(ForeignKey("run.id", ondelete="CASCADE"), primary_key=True)
    deployment_id: Mapped[int] = mapped_column(
        ForeignKey("deployment.id", ondelete="CASCADE"), primary_key=True
    )


class Advisory(Base):
    """Advice on a run's configuration for one target deployment and load (e.g. train deeper).
    Statuses and history follow the alerts' (open, investigating, explained, resolved, dismissed)."""

    __tablename__ = "advisory"
    __table_args__ = (UniqueConstraint("run_id", "deployment_id", "concurrency", "kind"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("run.id", ondelete="CASCADE"), index=True)
    deployment_id: Mapped[int] = mapped_column(ForeignKey("deployment.id", ondelete="CASCADE"))
    concurrency: Mapped[int] = mapped_column(Integer, default=1)
    kind: Mapped[str] = mapped_column(String(40), default="depth")
    trained_depth: Mapped[int]
    best_depth: Mapped[int]
    gain: Mapped[float] = mapped_column(Float)  # best tok/s / tok/s at the trained depth - 1
    trained_tps: Mapped[float] = mapped_column(Float)
    best_tps: Mapped[float] = mapped_column(Float)
    suggested_ttt: Mapped[int]
    time_factor: Mapped[float] = mapped_column(Float)
    curve_source: Mapped[str] = mapped_column(String(20))  # training | prior
    curve: Mapped[list[Any]] = mapped_column(JSON)
    parameter_set_id: Mapped[int | None] = mapped_column(ForeignKey("parameter_set.id", ondelete="SET NULL"))
    message: Mapped[str] = mapped_column(Text)
    active: Mapped[bool] = mapped_column(Boolean, default=True)  # the advice still holds
    status: Mapped[str] = mapped_column(String(20), default="open", index=True)
    note: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)

    run: Mapped[Run] = relationship()
    deployment: Mapped[Deployment] = relationship()
    events: Mapped[list["AdvisoryEvent"]] = relationship(
        order_by="AdvisoryEvent.id", cascade="all, delete-orphan"
    )


class AdvisoryEvent(Base):
    """Who (or specdash itself, as the advice changed) changed an advisory's status or note, and when."""

    __tablename__ = "advisory_event"

    id: Mapped[int] = mapped_column(primary_key=True)
    advisory_id: Mapped[int] = mapped_column(ForeignKey("advisory.id", ondelete="CASCADE"), index=True)
    at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    who: Mapped[str | None] = mapped_column(String(200))
    from_status: Mapped[str | None] = mapped_column(String(20))
    to_status: Mapped[str] = mapped_column(String(20))
    note: Mapped[str | None] = mapped_column(Text)


class FollowedFile(Base):
    """A growing file `specdash ingest --follow` reads: how far it got, and how to tell the file again."""

    __tablename__ = "followed_file"

    id: Mapped[int] = mapped_column(primary_key=True)
    path: Mapped[str] = mapped_column(String(1000), unique=True)
    format: Mapped[str | None] = mapped_column(String(60))
    device: Mapped[int | None] = mapped_column(BigInteger)
    inode: Mapped[int | None] = mapped_column(BigInteger)
    offset_bytes: Mapped[int] = mapped_column(BigInteger, default=0)  # bytes consumed: always a line boundary
    lines: Mapped[int] = mapped_column(BigInteger, default=0)
    fingerprint: Mapped[str | None] = mapped_column(String(64))  # sha256 of the first bytes read
    fingerprint_bytes: Mapped[int] = mapped_column(Integer, default=0)
    state: Mapped[dict[str, Any] | None]  # what the parser knows from earlier lines (run name, args)
    updated_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class Notification(Base):
    """One alert or advisory offered to one webhook: sent once, retried until it is."""

    __tablename__ = "notification"
    __table_args__ = (UniqueConstraint("kind", "ref_id", "target"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    kind: Mapped[str] = mapped_column(String(20))  # alert | advisory
    ref_id: Mapped[int]
    target: Mapped[str] = mapped_column(String(64))  # sha256 of the webhook URL (the URL is a secret)
    status: Mapped[str] = mapped_column(
        String(20), default="pending", index=True
    )  # pending|sent|failed|skipped
    payload: Mapped[dict[str, Any]]
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    sent_at: Mapped[datetime | None] = mapped_column(DateTime)
