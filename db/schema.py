"""Create, upgrade and check the database schema with the Alembic scripts in migrations/.

Alembic is imported only to migrate: checking a database on every command reads its version row directly."""

from importlib.resources import files

from sqlalchemy import Engine, create_engine, inspect, text
from sqlalchemy.pool import NullPool

# The newest revision in migrations/versions; a test keeps it equal to Alembic's head.
SCHEMA_REVISION = "0002"


class SchemaOutOfDate(Exception):
    """The database is missing or behind the code; the message says how to fix it."""


def alembic_config(engine: Engine | None = None):
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(files("specdash.migrations")))
    if engine is not None:
        config.set_main_option("sqlalchemy.url", engine.url.render_as_string(hide_password=False))
    return config


def head_revision() -> str:
    from alembic.script import ScriptDirectory

    heads = ScriptDirectory.from_config(alembic_config()).get_heads()
    assert len(heads) == 1, f"migrations have {len(heads)} heads"
    return heads[0]


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as connection:
        if not inspect(connection).has_table("alembic_version"):
            return None
        return connection.execute(text("SELECT version_num FROM alembic_version")).scalar()


def _run(engine: Engine, action, revision: str) -> None:
    # Migrations get a plain connection of their own: SQLite batch mode copies tables, which
    # needs foreign keys off, while the app's engine turns them on for every connection.
    plain = create_engine(engine.url, poolclass=NullPool)
    config = alembic_config(engine)
    with plain.connect() as connection:
        if plain.dialect.name == "sqlite":
            connection.execute(text("PRAGMA foreign_keys=OFF"))
            connection.commit()
        with connection.begin():
            config.attributes["connection"] = connection
            action(config, revision)
    plain.dispose()


def upgrade(engine: Engine, revision: str = "head") -> None:
    from alembic import command

    _run(engine, command.upgrade, revision)


def downgrade(engine: Engine, revision: str = "base") -> None:
    from alembic import command

    _run(engine, command.downgrade, revision)


def check_schema(engine: Engine) -> None:
    """Raise SchemaOutOfDate unless the database is at the latest revision."""
    current = current_revision(engine)
    head = SCHEMA_REVISION
    where = engine.url.render_as_string(hide_password=True)
    if current is None:
        raise SchemaOutOfDate(f"database {where} is not initialised: run 'specdash init' to create it")
    if current != head:
        raise SchemaOutOfDate(
            f"database {where} is at schema revision {current}, this specdash needs {head}: "
            "run 'specdash init' to upgrade"
        )
