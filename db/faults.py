"""Environment faults (a missing folder, a read-only or full disk, a file that is not a database, a server
that does not answer, a busy lock) turned into one sentence saying what is wrong and what to fix."""

import errno
from pathlib import Path

from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from specdash.db.engine import BadDatabaseURL, StoreBusy
from specdash.masking import masked_url, scrubbed

_SQLITE = (
    (
        "unable to open database file",
        "cannot open the database file {path}: check that the folder {folder} "
        "exists and that specdash may write there",
    ),
    (
        "readonly database",
        "the database {path} is read-only: make it (and its folder) writable, or use another with --db",
    ),
    ("disk is full", "the disk holding {path} is full: free some space and retry (nothing was written)"),
    ("disk i/o error", "the disk holding {path} failed to read or write: check it, then retry"),
    (
        "file is not a database",
        "{path} is not a SQLite database: pass --db with specdash's database file "
        "(or a new path, then 'specdash init')",
    ),
    (
        "database disk image is malformed",
        "{path} is damaged (malformed database image): restore it from a backup",
    ),
    (
        "database is locked",
        "another writer held the database {path} too long; nothing was written: retry when it has finished",
    ),
)
_OS = {
    errno.ENOSPC: "no space left on the device ({where}): free some space and retry; nothing was written",
    errno.EDQUOT: "disk quota exceeded ({where}): free some space and retry; nothing was written",
    errno.EROFS: "read-only file system ({where}): use a writable location",
    errno.EACCES: "permission denied ({where}): check who may read and write it",
    errno.ENOENT: "no such file or folder ({where})",
}


def explain(exc: BaseException, url: str | None = None) -> str | None:
    """What to tell the user about an environment fault, or None when it is not one; never a password of
    `url`, even where the driver's own message repeats it."""
    message = _explain(exc, url)
    return scrubbed(message, url) if message is not None else None


def _explain(exc: BaseException, url: str | None = None) -> str | None:
    if isinstance(exc, StoreBusy | BadDatabaseURL):
        return str(exc)
    where = _where(url)
    if isinstance(exc, OSError):
        template = _OS.get(exc.errno) if exc.errno is not None else None
        target = exc.filename or where
        if template:
            return template.format(where=target)
        return f"{target}: {exc.strerror or exc}"
    if isinstance(exc, RecursionError | OverflowError):
        return None
    if not isinstance(exc, SQLAlchemyError):
        return None
    text = str(getattr(exc, "orig", None) or exc).lower()
    if url and url.startswith("sqlite"):
        path = make_url(url).database or ":memory:"
        if path.startswith("file:"):  # a URI filename: sqlite:///file:PATH?mode=ro&uri=true
            path = path.removeprefix("file:").split("?", 1)[0]
        for needle, template in _SQLITE:
            if needle in text:
                return template.format(path=path, folder=Path(path).parent)
    if isinstance(exc, DBAPIError) and url and url.startswith("postgresql"):
        first = str(exc.orig).strip().splitlines()[0] if str(exc.orig).strip() else type(exc.orig).__name__
        if "connection" in text or "could not" in text or "timeout" in text or "password" in text:
            return (
                f"cannot connect to PostgreSQL at {where}: {first}. Start the server or fix --db / "
                "$SPECDASH_DB_URL"
            )
        if "value too long" in text or "out of range" in text:
            return f"PostgreSQL refused a value ({first}); nothing was written"
        return f"PostgreSQL at {where}: {first}"
    if isinstance(exc, DBAPIError):
        return f"database {where}: {str(exc.orig).strip() or type(exc.orig).__name__}"
    return None


def _where(url: str | None) -> str:
    if not url:
        return "the database"
    try:
        make_url(url)
    except Exception:  # noqa: BLE001 - a URL SQLAlchemy cannot parse is not shown
        return "the database URL given"
    return masked_url(url)
