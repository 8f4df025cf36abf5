"""Alembic migration scripts of the specdash schema."""
