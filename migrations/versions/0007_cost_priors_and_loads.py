"""cost priors and load levels: unstated profile costs are NULL (the priors fill them), deployments carry
the target's architecture, and SpecBundle's deployments span load levels

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01

- deployment and parameter_set: comm_fraction, draft_step_ms, round_overhead_ms, verify_growth_compute and
  verify_growth_comm become nullable; NULL means "not stated: use the published prior". A deployment whose
  five costs are all 0 stated none of them (0 was the ingest default), so they become NULL; a profile that
  states any cost keeps its numbers. Parameter sets keep theirs: the next refresh adds a theory version from
  the changed profile, as for any profile edit.
- deployment gains target_num_experts, target_experts_per_token, target_active_params_b and
  target_total_params_b (from the target's config.json and model card).
- SpecBundle deployments "SpecBundle: <model>, bs <n>" merge into one "SpecBundle: <model>" per target: the
  batch size is the benchmark's concurrency. Benchmarks and predictions (with their gaps, statuses and
  notes) move to the surviving deployment; the merged deployments' parameter sets are dropped (the survivor's
  theory set covers every load) and predictions that used them are recomputed by the next refresh.
"""

import re
from collections import defaultdict
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COSTS = ("comm_fraction", "draft_step_ms", "round_overhead_ms", "verify_growth_compute", "verify_growth_comm")
ARCHITECTURE = {"target_num_experts": sa.Integer, "target_experts_per_token": sa.Integer,
                "target_active_params_b": sa.Float, "target_total_params_b": sa.Float}
SPECBUNDLE = re.compile(r"^SpecBundle: (.+), bs \d+$")


def upgrade() -> None:
    with op.batch_alter_table("deployment") as batch:
        for name in COSTS:
            batch.alter_column(name, existing_type=sa.Float(), nullable=True)
        for name, type_ in ARCHITECTURE.items():
            batch.add_column(sa.Column(name, type_(), nullable=True))
    with op.batch_alter_table("parameter_set") as batch:
        for name in COSTS:
            batch.alter_column(name, existing_type=sa.Float(), nullable=True)
    bind = op.get_bind()
    # A profile that states no cost at all held the ingest defaults (0): it now takes the priors. One that
    # states any cost keeps its numbers, zeros included (they may be what its author measured or assumed).
    unstated = " AND ".join(f"({name} = 0 OR {name} IS NULL)" for name in COSTS)
    bind.execute(sa.text(f"UPDATE deployment SET {', '.join(f'{n} = NULL' for n in COSTS)} WHERE {unstated}"))
    _merge_specbundle(bind)


def _merge_specbundle(bind) -> None:
    groups: dict[str, list[int]] = defaultdict(list)
    for deployment_id, name in bind.execute(sa.text("SELECT id, name FROM deployment ORDER BY id")):
        match = SPECBUNDLE.match(name)
        if match:
            groups[match.group(1)].append(deployment_id)
    for model, ids in groups.items():
        survivor, merged = ids[0], ids[1:]
        taken = bind.execute(sa.text("SELECT id FROM deployment WHERE name = :n"),
                             {"n": f"SpecBundle: {model}"}).scalar()
        if taken is not None and taken not in ids:
            continue  # a deployment of that name exists already: leave these alone
        bind.execute(sa.text("UPDATE deployment SET name = :n WHERE id = :i"),
                     {"n": f"SpecBundle: {model}", "i": survivor})
        for old in merged:
            params = {"old": old, "new": survivor}
            bind.execute(sa.text("UPDATE benchmark SET deployment_id = :new WHERE deployment_id = :old"), params)
            bind.execute(sa.text("UPDATE prediction SET parameter_set_id = NULL WHERE parameter_set_id IN "
                                 "(SELECT id FROM parameter_set WHERE deployment_id = :old)"), params)
            bind.execute(sa.text("UPDATE prediction SET deployment_id = :new WHERE deployment_id = :old"), params)
            bind.execute(sa.text("DELETE FROM parameter_set WHERE deployment_id = :old"), params)
            bind.execute(sa.text("DELETE FROM deployment WHERE id = :old"), params)


def downgrade() -> None:
    # Merged SpecBundle deployments stay merged; unstated costs go back to 0.
    bind = op.get_bind()
    for table in ("deployment", "parameter_set"):
        for name in COSTS:
            bind.execute(sa.text(f"UPDATE {table} SET {name} = 0 WHERE {name} IS NULL"))
    with op.batch_alter_table("parameter_set") as batch:
        for name in COSTS:
            batch.alter_column(name, existing_type=sa.Float(), nullable=False)
    with op.batch_alter_table("deployment") as batch:
        for name in ARCHITECTURE:
            batch.drop_column(name)
        for name in COSTS:
            batch.alter_column(name, existing_type=sa.Float(), nullable=False)
