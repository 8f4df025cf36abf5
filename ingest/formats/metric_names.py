"""One home for the names of training metrics: what a trainer's console or tracker calls a metric, and the
name specdash stores it under (`train/acc_i`, `train/ploss_i`, `train/loss`, `train/lr`, `eval/...`).

SpecForge's rebuilt trainer prints backend-neutral names (`acc_0`, `ploss_0`, `loss`, `lr`, `grad_norm`)
and adds the `train/` namespace only at the tracker boundary (`training_metric_names` in
specforge/training/tracking.py); a list-valued metric becomes `name/index` keys there (`scalar_metrics`), so
`eval/per_position_acc: [0.71, 0.52]` is `eval/per_position_acc/0`, `eval/per_position_acc/1`. The same
rules apply to a console line, a TensorBoard tag, an MLflow metric key and a W&B history key. The
accuracy's names are costmodel/accuracies.py's (`train/acc_i`, what the acceptance curve is read from)."""

import math
import re
from collections.abc import Iterator

from specdash.costmodel.accuracies import ACCURACY, TRAIN_NAMESPACE, accuracy_name

NAMESPACES = (TRAIN_NAMESPACE, "eval/", "test/", "val/")
# `<namespace>/<name>/<index>` of a per-position metric, and the specdash name each becomes
_INDEXED = re.compile(
    rf"^(?P<ns>(?:train|eval|test|val)/)(?P<name>{ACCURACY}|ploss|per_position_acc|acceptance_rate)/(?P<i>\d+)$"
)
_CANONICAL = {"per_position_acc": ACCURACY}
# metrics a SpecForge strategy reports under their bare names (the console without a tracker)
_BARE_EVIDENCE = re.compile(rf"^(?:{ACCURACY}|ploss|acceptance_rate)_\d+$|^(?:{ACCURACY}|loss)$")
_CACHE: dict[str, str] = {}
MAX_CACHED = 10_000  # a run has a few dozen names; a file with endless new ones must not grow memory


def stored_name(name: str) -> str:
    """The name specdash stores a trainer's metric under: SpecForge's `train/` namespace for a bare name,
    and `<ns>/acc_i`, `<ns>/ploss_i`, `<ns>/acceptance_rate_i` for a list metric's `name/index` keys."""
    found = _CACHE.get(name)
    if found is not None:
        return found
    full = name if name.startswith(NAMESPACES) else f"{TRAIN_NAMESPACE}{name}"
    if match := _INDEXED.match(full):
        metric = _CANONICAL.get(match["name"], match["name"])
        position = int(match["i"])
        full = (
            accuracy_name(position, match["ns"])
            if metric == ACCURACY
            else f"{match['ns']}{metric}_{position}"
        )
    if len(_CACHE) >= MAX_CACHED:
        _CACHE.clear()
    _CACHE[name] = full
    return full


# speculators logs `train/cond_acc_i` (position i right given every earlier one was): the conditional
# acceptance specdash's acc_i stands for, stored under both names
_CONDITIONAL = re.compile(r"^(?P<ns>train|val|eval)/cond_acc_(?P<i>\d+)$")


def aliases(stored: str) -> tuple[str, ...]:
    """Further names a stored metric is also kept under: `train/acc_i` for speculators' `train/cond_acc_i`."""
    match = _CONDITIONAL.match(stored)
    if match is None:
        return ()
    namespace = TRAIN_NAMESPACE if match["ns"] == "train" else "eval/"
    return (accuracy_name(int(match["i"]), namespace),)


def looks_like_trainer_metrics(names) -> bool:
    """Names a SpecForge-like trainer logs: namespaced (`train/acc_0`) or its bare strategy names."""
    return any(name.startswith(NAMESPACES[:3]) or _BARE_EVIDENCE.match(name) for name in names)


def flatten(name: str, value) -> Iterator[tuple[str, float]]:
    """(name, number) pairs of one logged value: a number as it is, a list or tuple as `name/index` for
    each number in it (nested lists go deeper); anything else (text, None, a bool) yields nothing."""
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        try:
            yield name, float(value)
        except OverflowError:  # an integer past a float's range: infinite, which the rules refuse by line
            yield name, math.inf if value > 0 else -math.inf
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value[:1024]):
            yield from flatten(f"{name}/{index}", item)
