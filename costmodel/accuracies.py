"""Per-position acceptance from a trainer's accuracy metrics: train/acc_0, train/acc_1, ... are the
conditional acceptance at draft positions 0, 1, ... (SpecForge's and the EAGLE repository's names)."""

import re
from collections.abc import Mapping

ACCURACY_PREFIX = "train/acc_"
_ACCURACY_KEY = re.compile(r"^train/acc_(\d+)$")


def accuracy_position(name: str) -> int | None:
    """The draft position a `train/acc_i` metric is logged for; None for any other metric."""
    match = _ACCURACY_KEY.match(name)
    return int(match[1]) if match else None


def rates_from_accuracies(by_position: Mapping[int, float]) -> list[float]:
    """The acceptance curve the accuracies give: positions 0, 1, ... as long as each is logged and a share
    in [0, 1] (a gap or a value out of range ends it)."""
    rates: list[float] = []
    while len(rates) in by_position and 0 <= by_position[len(rates)] <= 1:
        rates.append(by_position[len(rates)])
    return rates
