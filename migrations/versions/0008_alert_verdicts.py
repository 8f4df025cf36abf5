"""one alert (verdict and investigation) per benchmark; muted diagnoses

Status and note move from each source's gap to the benchmark's alert, and gap_event becomes alert_event.
A benchmark whose gaps had different statuses keeps the one changed last (an investigated gap wins over
an untouched open one); every history entry is kept, on the benchmark's alert.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

DEFAULT_GAP_THRESHOLD = 0.10


def upgrade() -> None:
    op.create_table(
        "alert_mute",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("deployment_id", sa.Integer(), nullable=False),
        sa.Column("diagnosis", sa.String(length=60), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("who", sa.String(length=200), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("lifted_at", sa.DateTime(), nullable=True),
        sa.Column("lifted_by", sa.String(length=200), nullable=True),
        sa.ForeignKeyConstraint(
            ["deployment_id"],
            ["deployment.id"],
            name=op.f("fk_alert_mute_deployment_id_deployment"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_alert_mute")),
    )
    with op.batch_alter_table("alert_mute", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_alert_mute_deployment_id_alert_mute_diagnosis"),
            ["deployment_id", "diagnosis"],
            unique=False,
        )
    op.create_table(
        "alert",
        sa.Column("benchmark_id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("gap_id", sa.Integer(), nullable=True),
        sa.Column("is_alert", sa.Boolean(), nullable=False),
        sa.Column("severity", sa.String(length=20), nullable=True),
        sa.Column("code", sa.String(length=60), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["benchmark_id"],
            ["benchmark.id"],
            name=op.f("fk_alert_benchmark_id_benchmark"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["gap_id"], ["gap.id"], name=op.f("fk_alert_gap_id_gap"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("benchmark_id", name=op.f("pk_alert")),
    )
    with op.batch_alter_table("alert", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_alert_gap_id"), ["gap_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_alert_is_alert"), ["is_alert"], unique=False)
        batch_op.create_index(batch_op.f("ix_alert_status"), ["status"], unique=False)
        batch_op.create_index(batch_op.f("ix_alert_updated_at"), ["updated_at"], unique=False)
    op.create_table(
        "alert_event",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("benchmark_id", sa.Integer(), nullable=False),
        sa.Column("at", sa.DateTime(), nullable=False),
        sa.Column("who", sa.String(length=200), nullable=True),
        sa.Column("from_status", sa.String(length=20), nullable=True),
        sa.Column("to_status", sa.String(length=20), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["benchmark_id"],
            ["alert.benchmark_id"],
            name=op.f("fk_alert_event_benchmark_id_alert"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_alert_event")),
    )
    with op.batch_alter_table("alert_event", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_alert_event_benchmark_id"), ["benchmark_id"], unique=False)

    _move_investigations_to_alerts()

    with op.batch_alter_table("gap_event", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_gap_event_gap_id"))
    op.drop_table("gap_event")
    with op.batch_alter_table("gap", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_gap_status"))
        batch_op.drop_column("status")
        batch_op.drop_column("note")


def _move_investigations_to_alerts() -> None:
    """One alert per benchmark with gaps, judged as 0001 judged them (|gap| at or above the deployment's
    threshold, else the global one) until the next refresh applies the new rules."""
    bind = op.get_bind()
    setting = bind.execute(sa.text("SELECT value FROM setting WHERE key = 'gap_threshold'")).scalar()
    global_threshold = float(setting) if setting is not None else DEFAULT_GAP_THRESHOLD
    rows = bind.execute(
        sa.text(
            "SELECT g.id, g.benchmark_id, g.gap, g.severity, g.status, g.note, g.updated_at, d.gap_threshold "
            "FROM gap g JOIN benchmark b ON b.id = g.benchmark_id JOIN deployment d ON d.id = b.deployment_id "
            "ORDER BY g.benchmark_id, g.id"
        )
    ).all()
    chosen: dict[int, tuple] = {}
    for row in rows:
        best = chosen.get(row.benchmark_id)
        # the investigated gap wins; among equals, the one changed last
        rank = (row.status != "open", row.updated_at)
        if best is None or rank > (best.status != "open", best.updated_at):
            chosen[row.benchmark_id] = row
    alerts = []
    for row in chosen.values():
        threshold = row.gap_threshold or global_threshold
        raised = abs(row.gap) >= threshold
        alerts.append(
            {
                "benchmark_id": row.benchmark_id,
                "gap_id": row.id,
                "is_alert": raised,
                "severity": row.severity,
                "code": None,
                "reason": f"gap {row.gap:+.1%} {'at or above' if raised else 'below'} the threshold {threshold:.0%}",
                "status": row.status,
                "note": row.note,
                "updated_at": row.updated_at,
            }
        )
    # untyped columns: updated_at goes back as the backend gave it (text on SQLite, a datetime elsewhere)
    alert_table = sa.table(
        "alert",
        *(
            sa.column(name)
            for name in (
                "benchmark_id",
                "gap_id",
                "is_alert",
                "severity",
                "code",
                "reason",
                "status",
                "note",
                "updated_at",
            )
        ),
    )
    if alerts:
        op.bulk_insert(alert_table, alerts)
    bind.execute(
        sa.text(
            "INSERT INTO alert_event (benchmark_id, at, who, from_status, to_status, note) "
            "SELECT g.benchmark_id, e.at, e.who, e.from_status, e.to_status, e.note "
            "FROM gap_event e JOIN gap g ON g.id = e.gap_id ORDER BY e.id"
        )
    )


def downgrade() -> None:
    with op.batch_alter_table("gap", schema=None) as batch_op:
        batch_op.add_column(sa.Column("status", sa.String(length=20), nullable=False, server_default="open"))
        batch_op.add_column(sa.Column("note", sa.Text(), nullable=True))
        batch_op.create_index(batch_op.f("ix_gap_status"), ["status"], unique=False)
    op.create_table(
        "gap_event",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("gap_id", sa.Integer(), nullable=False),
        sa.Column("at", sa.DateTime(), nullable=False),
        sa.Column("who", sa.String(length=200), nullable=True),
        sa.Column("from_status", sa.String(length=20), nullable=True),
        sa.Column("to_status", sa.String(length=20), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["gap_id"], ["gap.id"], name=op.f("fk_gap_event_gap_id_gap"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_gap_event")),
    )
    with op.batch_alter_table("gap_event", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_gap_event_gap_id"), ["gap_id"], unique=False)
    bind = op.get_bind()
    # every gap of a benchmark takes its alert's status; the history goes to the verdict's gap
    bind.execute(
        sa.text(
            "UPDATE gap SET status = (SELECT a.status FROM alert a WHERE a.benchmark_id = gap.benchmark_id), "
            "note = (SELECT a.note FROM alert a WHERE a.benchmark_id = gap.benchmark_id) "
            "WHERE benchmark_id IN (SELECT benchmark_id FROM alert)"
        )
    )
    bind.execute(
        sa.text(
            "INSERT INTO gap_event (gap_id, at, who, from_status, to_status, note) "
            "SELECT COALESCE(a.gap_id, (SELECT min(g.id) FROM gap g WHERE g.benchmark_id = a.benchmark_id)), "
            "e.at, e.who, e.from_status, e.to_status, e.note FROM alert_event e "
            "JOIN alert a ON a.benchmark_id = e.benchmark_id "
            "WHERE a.gap_id IS NOT NULL OR EXISTS (SELECT 1 FROM gap g WHERE g.benchmark_id = a.benchmark_id) "
            "ORDER BY e.id"
        )
    )
    with op.batch_alter_table("gap", schema=None) as batch_op:
        batch_op.alter_column("status", server_default=None)
    with op.batch_alter_table("alert_event", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_alert_event_benchmark_id"))
    op.drop_table("alert_event")
    with op.batch_alter_table("alert", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_alert_updated_at"))
        batch_op.drop_index(batch_op.f("ix_alert_status"))
        batch_op.drop_index(batch_op.f("ix_alert_is_alert"))
        batch_op.drop_index(batch_op.f("ix_alert_gap_id"))
    op.drop_table("alert")
    with op.batch_alter_table("alert_mute", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_alert_mute_deployment_id_alert_mute_diagnosis"))
    op.drop_table("alert_mute")
