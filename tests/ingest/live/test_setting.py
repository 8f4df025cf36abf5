"""`--setting` in the form every page writes a setting in."""

import pytest

from specdash.ingest.live.setting import parse_setting
from specdash.labels import setting_label


@pytest.mark.parametrize(
    "text,expected",
    [
        ("EAGLE3 3/1/4", ("EAGLE3", 3, 1, 4)),
        ("eagle3 5/-/-", ("EAGLE3", 5, None, None)),
        ("EAGLE", ("EAGLE", None, None, None)),
        ("  mtp   1/1/2 ", ("MTP", 1, 1, 2)),
        ("no speculation", (None, None, None, None)),
        ("none", (None, None, None, None)),
    ],
)
def test_settings_read_as_written(text, expected):
    setting = parse_setting(text)
    assert (
        setting.speculative_algorithm,
        setting.num_steps,
        setting.topk,
        setting.num_draft_tokens,
    ) == expected


def test_a_setting_reads_back_what_setting_label_writes():
    row = {"speculative_algorithm": "EAGLE3", "num_steps": 6, "topk": 1, "num_draft_tokens": 7}
    setting = parse_setting(setting_label(row))
    assert setting.model_dump(include=set(row)) == row


@pytest.mark.parametrize(
    "text,message",
    [
        ("EAGLE3 3/1", "not a speculation setting: write it as 'EAGLE3 3/1/4'"),
        ("3/1/4", "not a speculation setting"),
        ("EAGLE3 3/1/x", "not a speculation setting"),
        ("EAGLE3 0/1/4", "num_steps"),
        ("EAGLE3 4/1/2", "2 draft tokens cannot hold 4 draft steps"),
    ],
)
def test_bad_settings_say_what_is_expected(text, message):
    with pytest.raises(ValueError, match=message):
        parse_setting(text)
