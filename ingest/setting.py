"""The speculation setting a user states for a benchmark file that does not carry one (a GuideLLM report,
`--setting EAGLE3/3/1/4`): algorithm / draft steps / topk / draft tokens, SGLang's order."""

from dataclasses import dataclass

from specdash.costmodel.throughput import verified_tokens
from specdash.db.records import MAX_DRAFT_TOKENS, MAX_STEPS, MAX_TOPK
from specdash.ingest.formats.common import algorithm_name
from specdash.ingest.records import SPECULATION_UNKNOWN

NO_SPECULATION = frozenset({"none", "off", "no", "baseline", "no-spec", "nospec"})
SETTING_HELP = (
    "ALGORITHM[/STEPS[/TOPK[/DRAFT_TOKENS]]], e.g. EAGLE3/3/1/4 (3 steps, chain, 4 tokens verified); "
    "'none' for a run without speculation, 'unknown' when it speculated with an unknown setting"
)


@dataclass(frozen=True)
class Setting:
    speculative_algorithm: str | None  # None: no speculation
    num_steps: int | None = None
    topk: int | None = None
    num_draft_tokens: int | None = None

    def fields(self) -> dict[str, str | int | None]:
        return {
            "speculative_algorithm": self.speculative_algorithm,
            "num_steps": self.num_steps,
            "topk": self.topk,
            "num_draft_tokens": self.num_draft_tokens,
        }


def _number(part: str, name: str, low: int, high: int) -> int:
    try:
        value = int(part)
    except ValueError:
        raise ValueError(f"{name} must be a whole number, got {part!r}") from None
    if not low <= value <= high:
        raise ValueError(f"{name} must be between {low} and {high}, got {value}")
    return value


def parse_setting(text: str) -> Setting:
    """`EAGLE3/3/1/4` -> EAGLE3, 3 steps, topk 1, 4 draft tokens. Missing parts: topk 1, and draft
    tokens K * topk + 1 (a full tree; a chain's K + 1). `none` is a run without speculation, `unknown`
    (or an algorithm alone) one that speculated with steps not stated. Raises ValueError with the reason."""
    parts = [p.strip() for p in text.strip().split("/")]
    if not parts[0]:
        raise ValueError(f"setting {text!r}: expected {SETTING_HELP}")
    if len(parts) > 4:
        raise ValueError(f"setting {text!r}: at most 4 parts, got {len(parts)} ({SETTING_HELP})")
    head = parts[0].lower()
    if head in NO_SPECULATION:
        if len(parts) > 1:
            raise ValueError(f"setting {text!r}: no steps without speculation")
        return Setting(None)
    if head == SPECULATION_UNKNOWN:
        if len(parts) > 1:
            raise ValueError(f"setting {text!r}: an unknown algorithm with known steps: name the algorithm")
        return Setting(SPECULATION_UNKNOWN)
    algorithm = algorithm_name(parts[0])
    if len(parts) == 1:
        return Setting(algorithm)
    steps = _number(parts[1], "steps", 1, MAX_STEPS)
    topk = _number(parts[2], "topk", 1, MAX_TOPK) if len(parts) > 2 else 1
    tokens = _number(parts[3], "draft tokens", 2, MAX_DRAFT_TOKENS) if len(parts) > 3 else None
    tokens = verified_tokens(steps, topk, tokens)
    if topk == 1 and tokens < steps:
        raise ValueError(f"setting {text!r}: {tokens} draft tokens cannot hold {steps} draft steps")
    return Setting(algorithm, steps, topk, tokens)
