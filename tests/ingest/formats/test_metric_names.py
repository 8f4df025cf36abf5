"""The one rule for training metrics' names (ingest/formats/metric_names.py): what a trainer's console or
tracker calls a metric, and the name specdash stores it under."""

import pytest

from specdash.ingest.formats.metric_names import flatten, stored_name


@pytest.mark.parametrize(
    "name,stored",
    [
        ("acc_0", "train/acc_0"),  # the console without a tracker: bare names
        ("ploss_3", "train/ploss_3"),
        ("loss", "train/loss"),
        ("lr", "train/lr"),
        ("acceptance_rate_1", "train/acceptance_rate_1"),
        ("perf/optimizer_step_time_s", "train/perf/optimizer_step_time_s"),
        ("train/acc_0", "train/acc_0"),  # the tracker's names, and the 2025 console's
        ("eval/ploss_2", "eval/ploss_2"),
        ("eval/per_position_acc/1", "eval/acc_1"),  # a list metric as `name/index`
        ("train/acc/2", "train/acc_2"),
        ("acc/0", "train/acc_0"),
        ("val/loss_0", "val/loss_0"),  # speculators' validation namespace stays
    ],
)
def test_names_map_onto_specdash_metrics_by_one_rule(name, stored):
    assert stored_name(name) == stored


def test_list_values_become_name_index():
    assert list(flatten("eval/per_position_acc", [0.5, 0.25])) == [
        ("eval/per_position_acc/0", 0.5),
        ("eval/per_position_acc/1", 0.25),
    ]
    assert list(flatten("note", "text")) == [] and list(flatten("flag", True)) == []
