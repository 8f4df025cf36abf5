"""What a visitor sees when something fails: one sentence and an error id; the traceback goes to the server
log under that id, never to the page (server paths, SQL and internals stay on the server)."""

import logging
import traceback
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import streamlit as st

from specdash.app.text import md
from specdash.config import resolve_db_url
from specdash.db.faults import explain
from specdash.masking import scrubbed

LOG = logging.getLogger("specdash.app")


class Scrubbed(logging.Filter):
    """Takes the database's password out of a record and its traceback before any handler writes them."""

    def filter(self, record: logging.LogRecord) -> bool:
        url = resolve_db_url()
        record.msg, record.args = scrubbed(record.getMessage(), url), None
        if record.exc_info and record.exc_info[1] is not None:
            record.exc_text = scrubbed("".join(traceback.format_exception(record.exc_info[1])).rstrip(), url)
        return True


LOG.addFilter(Scrubbed())


def show_failure(exc: BaseException, action: str) -> str:
    """Log the traceback under a new error id and show the visitor what failed; returns the id."""
    error_id = uuid.uuid4().hex[:12]
    LOG.error("error %s while %s", error_id, action, exc_info=exc)
    known = explain(exc, resolve_db_url())
    reason = md(known) if known else "an unexpected error"
    st.error(
        f"{md(action)} failed: {reason}. Error id `{error_id}` (the details are in the server log).",
        icon=":material/error:",
    )
    return error_id


@contextmanager
def guarded(action: str) -> Iterator[None]:
    """Run a page's step; a failure is shown with an error id, then the page stops (st.stop and st.rerun
    pass through: they are not Exceptions)."""
    try:
        yield
    except Exception as exc:  # noqa: BLE001 - every failure becomes a message and a log entry
        show_failure(exc, action)
        st.stop()
