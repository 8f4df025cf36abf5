"""live training: advisories, run target deployments, followed files, notifications

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "followed_file",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("path", sa.String(length=1000), nullable=False),
        sa.Column("format", sa.String(length=60), nullable=True),
        sa.Column("device", sa.BigInteger(), nullable=True),
        sa.Column("inode", sa.BigInteger(), nullable=True),
        sa.Column("offset_bytes", sa.BigInteger(), nullable=False),
        sa.Column("lines", sa.BigInteger(), nullable=False),
        sa.Column("fingerprint", sa.String(length=64), nullable=True),
        sa.Column("fingerprint_bytes", sa.Integer(), nullable=False),
        sa.Column("state", sa.JSON(), nullable=True),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_followed_file")),
        sa.UniqueConstraint("path", name=op.f("uq_followed_file_path")),
    )
    op.create_table(
        "notification",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("ref_id", sa.Integer(), nullable=False),
        sa.Column("target", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("sent_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_notification")),
        sa.UniqueConstraint("kind", "ref_id", "target", name=op.f("uq_notification_kind_ref_id_target")),
    )
    with op.batch_alter_table("notification", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_notification_status"), ["status"], unique=False)

    op.create_table(
        "run_deployment",
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("deployment_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["deployment_id"],
            ["deployment.id"],
            name=op.f("fk_run_deployment_deployment_id_deployment"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["run_id"], ["run.id"], name=op.f("fk_run_deployment_run_id_run"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("run_id", "deployment_id", name=op.f("pk_run_deployment")),
    )
    op.create_table(
        "advisory",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("deployment_id", sa.Integer(), nullable=False),
        sa.Column("concurrency", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=40), nullable=False),
        sa.Column("trained_depth", sa.Integer(), nullable=False),
        sa.Column("best_depth", sa.Integer(), nullable=False),
        sa.Column("gain", sa.Float(), nullable=False),
        sa.Column("trained_tps", sa.Float(), nullable=False),
        sa.Column("best_tps", sa.Float(), nullable=False),
        sa.Column("suggested_ttt", sa.Integer(), nullable=False),
        sa.Column("time_factor", sa.Float(), nullable=False),
        sa.Column("curve_source", sa.String(length=20), nullable=False),
        sa.Column("curve", sa.JSON(), nullable=False),
        sa.Column("parameter_set_id", sa.Integer(), nullable=True),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["deployment_id"],
            ["deployment.id"],
            name=op.f("fk_advisory_deployment_id_deployment"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["parameter_set_id"],
            ["parameter_set.id"],
            name=op.f("fk_advisory_parameter_set_id_parameter_set"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["run_id"], ["run.id"], name=op.f("fk_advisory_run_id_run"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_advisory")),
        sa.UniqueConstraint(
            "run_id",
            "deployment_id",
            "concurrency",
            "kind",
            name=op.f("uq_advisory_run_id_deployment_id_concurrency_kind"),
        ),
    )
    with op.batch_alter_table("advisory", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_advisory_run_id"), ["run_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_advisory_status"), ["status"], unique=False)

    op.create_table(
        "advisory_event",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("advisory_id", sa.Integer(), nullable=False),
        sa.Column("at", sa.DateTime(), nullable=False),
        sa.Column("who", sa.String(length=200), nullable=True),
        sa.Column("from_status", sa.String(length=20), nullable=True),
        sa.Column("to_status", sa.String(length=20), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["advisory_id"],
            ["advisory.id"],
            name=op.f("fk_advisory_event_advisory_id_advisory"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_advisory_event")),
    )
    with op.batch_alter_table("advisory_event", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_advisory_event_advisory_id"), ["advisory_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("advisory_event", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_advisory_event_advisory_id"))

    op.drop_table("advisory_event")
    with op.batch_alter_table("advisory", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_advisory_status"))
        batch_op.drop_index(batch_op.f("ix_advisory_run_id"))

    op.drop_table("advisory")
    op.drop_table("run_deployment")
    with op.batch_alter_table("notification", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_notification_status"))

    op.drop_table("notification")
    op.drop_table("followed_file")
