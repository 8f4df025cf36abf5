"""Where the database lives: `--db`, else `SPECDASH_DB_URL`, else `specdash.db` in the working directory."""

import os

DEFAULT_DB_URL = "sqlite:///specdash.db"
DB_URL_ENV = "SPECDASH_DB_URL"


def resolve_db_url(explicit: str | None = None) -> str:
    if explicit:
        return explicit
    return os.environ.get(DB_URL_ENV) or DEFAULT_DB_URL
