"""Alembic environment: runs on a connection handed in by db.schema, or on the URL the app uses."""

from alembic import context
from sqlalchemy import create_engine
from sqlalchemy.pool import NullPool

from specdash.config import resolve_db_url
from specdash.db.schema import store_metadata

config = context.config
target_metadata = store_metadata()


def _configure_and_run(connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=True,
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _configure_and_run(connection)
        return
    url = config.get_main_option("sqlalchemy.url") or resolve_db_url()
    engine = create_engine(url, poolclass=NullPool)
    with engine.connect() as connection:
        _configure_and_run(connection)


if context.is_offline_mode():
    context.configure(
        url=config.get_main_option("sqlalchemy.url") or resolve_db_url(),
        target_metadata=target_metadata,
        render_as_batch=True,
        literal_binds=True,
    )
    with context.begin_transaction():
        context.run_migrations()
else:
    run_migrations_online()
