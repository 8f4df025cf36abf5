"""Which deployment profiles the What-if page starts a drafter on."""

import pandas as pd

# the story's comparison, for a drafter measured nowhere: the first PCIe profile against the first NVLink one
PREFERRED = ("pcie", "nvlink")


def profile_defaults(deployments: pd.DataFrame, measured_on: list[str]) -> list[str]:
    """The left and right profiles: a drafter's own deployments (most benchmarked first; then one serving
    the same target model, a contrasting interconnect first; else its own on both sides, to edit one), and
    PCIe against NVLink for a drafter measured nowhere."""
    names = [str(name) for name in deployments["name"]]
    kinds = dict(zip(names, deployments["interconnect"].fillna("").str.lower(), strict=True))
    targets = dict(zip(names, deployments["target_model"], strict=True))
    own = [name for name in measured_on if name in names]
    if not own:
        found = [next((name for name in names if kinds[name] == kind), None) for kind in PREFERRED]
        return [name or names[min(i, len(names) - 1)] for i, name in enumerate(found)]
    left = own[0]
    same_target = [n for n in names if n != left and targets[n] is not None and targets[n] == targets[left]]
    others = sorted(own[1:] or same_target, key=lambda name: kinds[name] == kinds[left])
    return [left, others[0] if others else left]
