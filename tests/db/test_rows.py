"""Typed rows from a query: the row type's fields are the query's labels, in order."""

from typing import NamedTuple

import pytest
from sqlalchemy import select

from specdash.db.engine import reading, transaction
from specdash.db.models import Run
from specdash.db.rows import driver_rows, rows_of


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


def test_driver_rows_are_the_rows_sqlalchemy_gives_as_tuples(engine):
    with transaction(engine) as session:
        session.add_all([Run(name="a", ttt_length=7), Run(name="b")])
    query = select(Run.id, Run.name, Run.ttt_length, (Run.id / 2.0).label("half")).order_by(Run.name)
    with reading(engine) as session:
        rows = driver_rows(session, query)
        assert rows == [tuple(row) for row in session.connection().execute(query)]
    assert rows == [(1, "a", 7, 0.5), (2, "b", None, 1.0)] and type(rows[0]) is tuple
