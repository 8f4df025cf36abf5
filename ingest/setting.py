"""The speculation setting a user states for what does not carry one (a GuideLLM report's `setting` label, a
live scrape's `--setting`), in either way specdash writes a setting: `EAGLE3/3/1/4` (SGLang's order,
trailing parts optional) or `EAGLE3 3/1/4` (specdash.labels.setting_label's form, which every page and
command shows, `-` where unknown, `no speculation` for a baseline)."""

import re

from pydantic import ValidationError

from specdash.costmodel.throughput import verified_tokens
from specdash.db.records import MAX_DRAFT_TOKENS, MAX_STEPS, MAX_TOPK
from specdash.ingest.records import SPECULATION_UNKNOWN, SpeculationSetting

# The engines' and trainers' names of an algorithm (lower case) -> the one specdash stores; any other
# name is stored upper-cased.
ALGORITHMS = {
    "eagle": "EAGLE",
    "eagle3": "EAGLE3",
    "nextn": "NEXTN",
    "mtp": "MTP",
    "medusa": "MEDUSA",
    "ngram": "NGRAM",
    "standalone": "STANDALONE",
    "deepseek_mtp": "MTP",
    "dflash": "DFLASH",
    "dspark": "DSPARK",
    "draft_model": "STANDALONE",
}
NO_SPECULATION = frozenset({"no speculation", "none", "off", "no", "baseline", "no-spec", "nospec"})
SETTING_HELP = (
    "ALGORITHM[/STEPS[/TOPK[/DRAFT_TOKENS]]] or ALGORITHM STEPS/TOPK/DRAFT_TOKENS, e.g. EAGLE3/3/1/4 or "
    "EAGLE3 3/1/4 (3 steps, chain, 4 tokens verified; '-' where unknown); 'no speculation' or 'none' for a "
    "run without speculation, 'unknown' when it speculated with an unknown setting"
)
ALGORITHM = re.compile(r"^[A-Za-z][\w.+-]*$")
UNKNOWN_PART = "-"


def algorithm_name(value: str | None) -> str | None:
    """The stored name of a speculative algorithm as an engine or trainer writes it; None for none."""
    if value is None or not str(value).strip() or str(value).strip().upper() == "NONE":
        return None
    text = str(value).strip()
    return ALGORITHMS.get(text.lower(), text.upper())


def _parts(text: str) -> list[str]:
    """[algorithm, steps, topk, draft tokens] as written, as many as given."""
    cleaned = " ".join(text.split())
    algorithm, space, shape = cleaned.partition(" ")
    if not space:
        return [part.strip() for part in cleaned.split("/")]
    # setting_label's form: the algorithm, a space, all three numbers
    if "/" in algorithm or " " in shape or shape.count("/") != 2:
        raise ValueError(f"setting {text!r}: expected {SETTING_HELP}")
    return [algorithm, *shape.split("/")]


def _number(part: str, name: str, low: int, high: int) -> int | None:
    if part == UNKNOWN_PART:
        return None
    try:
        value = int(part)
    except ValueError:
        raise ValueError(f"{name} must be a whole number or '{UNKNOWN_PART}', got {part!r}") from None
    if not low <= value <= high:
        raise ValueError(f"{name} must be between {low} and {high}, got {value}")
    return value


def parse_setting(text: str) -> SpeculationSetting:
    """`EAGLE3/3/1/4` or `EAGLE3 3/1/4` -> EAGLE3, 3 steps, topk 1, 4 draft tokens. A part left off takes
    its default: topk 1, draft tokens K * topk + 1 (a full tree; a chain's K + 1); a part written `-` is
    unknown. `no speculation` (or `none`) is a run without speculation, `unknown` one that speculated with
    an algorithm not stated, an algorithm alone one with steps not stated. Reads back whatever
    setting_label writes. Raises ValueError with the reason."""
    if " ".join(text.split()).lower() in NO_SPECULATION:
        return SpeculationSetting()
    parts = _parts(text)
    if len(parts) > 4:
        raise ValueError(f"setting {text!r}: at most 4 parts, got {len(parts)} ({SETTING_HELP})")
    if parts[0].lower() in NO_SPECULATION:
        raise ValueError(f"setting {text!r}: no steps without speculation")
    if not ALGORITHM.match(parts[0]):
        raise ValueError(f"setting {text!r}: expected {SETTING_HELP}")
    head = parts[0].lower()
    algorithm = SPECULATION_UNKNOWN if head == SPECULATION_UNKNOWN else algorithm_name(parts[0])
    try:
        steps = _number(parts[1], "steps", 1, MAX_STEPS) if len(parts) > 1 else None
        topk = _number(parts[2], "topk", 1, MAX_TOPK) if len(parts) > 2 else (1 if steps else None)
        if len(parts) > 3:
            tokens = _number(parts[3], "draft tokens", 1, MAX_DRAFT_TOKENS)
        else:
            tokens = verified_tokens(steps, topk) if steps and topk else None
    except ValueError as exc:
        raise ValueError(f"setting {text!r}: {exc}") from None
    try:
        return SpeculationSetting(
            speculative_algorithm=algorithm, num_steps=steps, topk=topk, num_draft_tokens=tokens
        )
    except ValidationError as exc:
        reasons = "; ".join(
            f"{'.'.join(map(str, error['loc'])) or 'setting'}: {error['msg'].removeprefix('Value error, ')}"
            for error in exc.errors(include_url=False)
        )
        raise ValueError(f"setting {text!r}: {reasons}") from None
