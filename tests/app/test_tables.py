"""app/tables.py's context column: shown only where the rows differ, a dash for a side not stated."""

import math

import pytest

from specdash.app.tables import context_labels


@pytest.mark.parametrize(
    "pairs,labels",
    [
        ([(1024.0, 512.0), (1024.0, 512.0)], None),  # one context: nothing to tell
        ([(None, None), (math.nan, math.nan)], None),  # none stated, as a frame's NaN too
        ([(1024.0, 512.0), (8192.0, 512.0)], ["1,024 / 512", "8,192 / 512"]),
        ([(257.1087, 128.0), (None, 300.5)], ["257 / 128", "- / 300"]),
        ([(1024.0, 512.0)], None),
    ],
)
def test_context_labels(pairs, labels):
    assert context_labels(pairs) == labels
