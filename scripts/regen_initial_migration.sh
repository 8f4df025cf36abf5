#!/usr/bin/env bash
# Regenerate migrations/versions/0001 from the models (only while the schema has a single revision).
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
rm -f migrations/versions/0001_*.py
.venv/bin/python - "$tmp" <<'PY'
import sys
from alembic import command
from specdash.db.schema import alembic_config
from specdash.db.engine import make_engine
cfg = alembic_config(make_engine(f"sqlite:///{sys.argv[1]}/m.db"))
cfg.set_main_option("script_location", "migrations")
command.revision(cfg, message="initial schema", autogenerate=True, rev_id="0001")
PY
.venv/bin/ruff format -q migrations/versions/
.venv/bin/ruff check -q --fix migrations/versions/ || true
sed -i 's/^Create Date: .*/Create Date: 2026-11-29/' migrations/versions/0001_initial_schema.py
rm -rf "$tmp"
