"""A file that only looks like a format is refused: detection needs a whole record of the format."""

import pytest
from sqlalchemy import func, select

from specdash.db.engine import reading
from specdash.db.models import Run
from specdash.ingest.pipeline import ingest
from specdash.ingest.policy import IngestPolicy
from specdash.ingest.sources import PathSource
from tests.conftest import FIXTURES, REPO
from tests.ingest_support import content

LOOKALIKE = FIXTURES / "lookalike"


@pytest.mark.parametrize(
    "path",
    [
        REPO / "docs" / "formats.md",  # quotes every format specdash reads
        LOOKALIKE / "NOTES",  # prose quoting log lines in backticks, no extension
        LOOKALIKE / "notes.txt",
        LOOKALIKE / "serving-notes.md",  # whole log lines, but in a document
    ],
    ids=lambda p: p.name,
)
def test_prose_about_logs_is_not_a_log(engine, path):
    before = content(engine)
    result = ingest(engine, PathSource(path))
    assert result.status == "failed"
    assert [str(p) for p in result.problems] == [
        f"{path}: format not recognised; pass --format (see 'specdash formats')"
    ]
    assert content(engine) == before


def test_a_path_quoted_in_prose_is_not_a_checkpoint(engine):
    # forced: the notes hold a backticked "Saved model configuration to `...`," and nothing a log holds
    result = ingest(engine, PathSource(LOOKALIKE / "NOTES"), IngestPolicy(format_name="specforge-log"))
    assert result.status == "failed"
    with reading(engine) as session:
        assert session.scalar(select(func.count()).select_from(Run)) == 0
