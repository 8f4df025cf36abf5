"""Typed rows from a query: the row type's fields are the query's labels, in order."""

from typing import NamedTuple

import pytest
from sqlalchemy import select

from specdash.db.engine import reading, transaction
from specdash.db.models import Run
from specdash.db.rows import rows_of


class NamedRun(NamedTuple):
    id: int
    name: str


class Misnamed(NamedTuple):
    name: str
    id: int


def test_rows_are_made_as_the_row_type(engine):
    with transaction(engine) as session:
        session.add_all([Run(name="a"), Run(name="b")])
    with reading(engine) as session:
        rows = rows_of(session, select(Run.id, Run.name).order_by(Run.name), NamedRun)
    assert rows == [NamedRun(1, "a"), NamedRun(2, "b")] and type(rows[0]) is NamedRun


def test_a_row_type_out_of_step_with_the_query_fails_loudly(engine):
    with reading(engine) as session, pytest.raises(TypeError, match="Misnamed has fields"):
        rows_of(session, select(Run.id, Run.name), Misnamed)
