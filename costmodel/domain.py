"""The domain's words as types, shared by every layer: a speculation setting, and the enums of where a
prediction and an accept length come from, what state a gap is in and how severe a diagnosis is."""

from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from specdash.costmodel.throughput import draft_steps, verified_tokens


class PredictionSource(StrEnum):
    """Where a built-in prediction comes from; an external prediction is named by its file instead."""

    THEORY = "theory"  # first principles with the published priors
    CALIBRATED = "calibrated"  # a parameter set fitted to the deployment's benchmarks


class TauSource(StrEnum):
    """Where the accept length of a prediction comes from."""

    TRAINING = "training"  # the checkpoint's training accuracies (acc_i), chained
    HISTORY = "history"  # the drafter's own earlier benchmarks
    MEASURED = "measured"  # the benchmarks' measured accept lengths


class GapStatus(StrEnum):
    """Where an alert (a gap over its threshold) stands; the first two are active."""

    OPEN = "open"
    INVESTIGATING = "investigating"
    EXPLAINED = "explained"
    RESOLVED = "resolved"
    DISMISSED = "dismissed"


ACTIVE_STATUSES = (GapStatus.OPEN.value, GapStatus.INVESTIGATING.value)  # an alert still to look into


class Severity(StrEnum):
    """How much a diagnosis matters, the most severe first."""

    CRITICAL = "critical"
    WARNING = "warning"
    INFO = "info"


def _known(value: object) -> bool:
    """Not None, NaN or pandas' NA (a row's missing value; none of them equals itself)."""
    if value is None:
        return False
    try:
        return bool(value == value)
    except TypeError:  # pandas' NA is neither equal nor unequal to itself
        return False


@dataclass(frozen=True)
class Setting:
    """What a speculative run drafts: its algorithm (None: no speculation), draft steps K, candidates per
    step (top-k) and the tokens a round verifies N, by the names the store and the engines give them; a
    part not stated is None (a parsed setting keeps an unknown top-k apart from 1 until it is stored).
    `width` is the one rule for a top-k not stated: a chain's 1."""

    speculative_algorithm: str | None
    num_steps: int | None = None
    topk: int | None = None
    num_draft_tokens: int | None = None

    @classmethod
    def of(
        cls,
        speculative_algorithm: str | None,
        num_steps: int | None = None,
        topk: int | None = None,
        num_draft_tokens: int | None = None,
    ) -> "Setting":
        """A setting as stored or parsed, any part possibly missing (None, NaN)."""
        return cls(
            speculative_algorithm if _known(speculative_algorithm) else None,
            int(num_steps) if _known(num_steps) and num_steps is not None else None,
            int(topk) if _known(topk) and topk is not None else None,
            int(num_draft_tokens) if _known(num_draft_tokens) and num_draft_tokens is not None else None,
        )

    @classmethod
    def from_row(cls, row: Any) -> "Setting":
        """The setting of anything indexable by column name (a dict, a pandas row, a record)."""
        return cls.of(row["speculative_algorithm"], row["num_steps"], row["topk"], row["num_draft_tokens"])

    @property
    def speculative(self) -> bool:
        return self.speculative_algorithm is not None

    @property
    def width(self) -> int:
        """Candidates per draft step: the top-k, 1 (a chain) when not stated."""
        return self.topk or 1

    @property
    def is_chain(self) -> bool:
        """One candidate per step; above one the draft is a tree."""
        return self.width == 1

    def stored(self) -> "Setting":
        """The setting as the store keeps it: the top-k stated (its width) when it speculates."""
        return replace(self, topk=self.width if self.speculative else self.topk)

    @property
    def verified_tokens(self) -> int | None:
        """N: as stated, else K + 1 for a chain, K * topk + 1 for a tree (None without K or N)."""
        if self.num_draft_tokens is not None:
            return self.num_draft_tokens
        return verified_tokens(self.num_steps, self.width) if self.num_steps else None

    @property
    def depth(self) -> int | None:
        """The draft depth K (a block drafter's from its tokens; costmodel.throughput.draft_steps)."""
        return draft_steps(self.num_steps, self.width, self.num_draft_tokens)

    @property
    def shape(self) -> str:
        """`3/1/4`: steps / top-k / draft tokens, `-` where unknown."""
        parts = (self.num_steps, self.topk, self.num_draft_tokens)
        return "/".join("-" if v is None else str(v) for v in parts)

    @property
    def label(self) -> str:
        """`EAGLE3 3/1/4`, or `no speculation` for a baseline."""
        return f"{self.speculative_algorithm} {self.shape}" if self.speculative else "no speculation"


@dataclass(frozen=True)
class SettingAtLoad(Setting):
    """A setting at the load it ran at: what a benchmark ran, as the Checkpoints page picks it."""

    concurrency: int = 1

    @property
    def label(self) -> str:
        return f"{super().label}, concurrency {self.concurrency}"
