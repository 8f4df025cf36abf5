"""Create, upgrade and check the database schema with the Alembic scripts in migrations/.

Alembic is imported only to migrate: checking a database on every command reads its version row directly."""

import re
from functools import cache
from importlib.resources import files

from sqlalchemy import Engine, MetaData, create_engine, inspect, text
from sqlalchemy.pool import NullPool

from specdash.masking import masked_url

_REVISION_LINE = re.compile(r"^(revision|down_revision)\b[^=]*=\s*(?:\"([^\"]*)\"|'([^']*)'|None)", re.M)


class SchemaOutOfDate(Exception):
    """The database is missing or behind the code; the message says how to fix it."""


def store_metadata() -> MetaData:
    """Every table of the store in one MetaData, as Alembic compares it: the core tables (db/models.py),
    the live-training ones (db/live_models.py), the Leaderboard's (db/leaderboard_models.py), the load fits
    (db/load_fit_models.py) and the Overview's summary rows (db/summary_models.py), which build on the core's."""
    from specdash.db import leaderboard_models, load_fit_models, summary_models  # noqa: F401  (register their tables)
    from specdash.db.live_models import Base

    return Base.metadata


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


@cache
def revision_history() -> tuple[str, ...]:
    """The revisions of migrations/versions from the first to the head, read from the scripts' own
    `revision` and `down_revision` lines (a test keeps this equal to Alembic's view)."""
    parents: dict[str, str | None] = {}
    for script in files("specdash.migrations").joinpath("versions").iterdir():
        if not script.name.endswith(".py") or script.name.startswith("__"):
            continue
        found = {m[1]: m[2] or m[3] or None for m in _REVISION_LINE.finditer(script.read_text())}
        revision = found.get("revision")
        if revision is not None:
            parents[revision] = found.get("down_revision")
    children = {parent: rev for rev, parent in parents.items()}
    history, rev = [], children.get(None)
    while rev is not None:
        history.append(rev)
        rev = children.get(rev)
    return tuple(history)


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
    """Migrate to `revision`; at the head, fill in the derived tables a revision created empty."""
    from alembic import command

    _run(engine, command.upgrade, revision)
    if revision == "head":
        fill_derived(engine)


def fill_derived(engine: Engine) -> None:
    """The Leaderboard's stored entries (revision 0015 creates the table empty) computed from the stored
    benchmarks by this specdash's ranking, when there are none yet and something competes."""
    from sqlalchemy.orm import Session

    from specdash.db import leaderboard_entries
    from specdash.db.leaderboard_models import LeaderboardEntry
    from specdash.db.models import Benchmark

    with Session(engine) as session, session.begin():
        if session.query(LeaderboardEntry.source).first() is not None:
            return
        competing = Benchmark.speculative_algorithm.is_not(None) & Benchmark.checkpoint_id.is_not(None)
        if session.query(Benchmark.id).filter(competing).first() is None:
            return
        leaderboard_entries.update(session, None)


def downgrade(engine: Engine, revision: str = "base") -> None:
    from alembic import command

    _run(engine, command.downgrade, revision)


def check_schema(engine: Engine) -> None:
    """Raise SchemaOutOfDate unless the database is at the head revision; the message tells a database
    that is behind (run init) from one written by a newer specdash (upgrade specdash)."""
    current = current_revision(engine)
    history = revision_history()
    head = history[-1]
    where = masked_url(engine.url.render_as_string(hide_password=False))
    if current is None:
        raise SchemaOutOfDate(f"database {where} is not initialised: run 'specdash init' to create it")
    if current == head:
        return
    if current in history:
        raise SchemaOutOfDate(
            f"database {where} is at schema revision {current}, this specdash needs {head}: "
            "run 'specdash init' to upgrade"
        )
    raise SchemaOutOfDate(
        f"database {where} is at schema revision {current}, which this specdash (schema {head}) does not "
        "know: it was written by a newer specdash; upgrade specdash to use it"
    )
