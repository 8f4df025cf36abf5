"""The domain's words as types, shared by every layer: a speculation setting and the enums of where a
prediction and an accept length come from, what state a gap is in and how severe a diagnosis is."""

from dataclasses import dataclass
from enum import StrEnum


class PredictionSource(StrEnum):
    """Where a built-in prediction comes from; an external prediction is named by its file instead."""

    THEORY = "theory"  # first principles with the published priors
    CALIBRATED = "calibrated"  # a parameter set fitted to the deployment's benchmarks


class TauSource(StrEnum):
    """Where the accept length of a prediction comes from."""

    TRAINING = "training"  # the checkpoint's training accuracies (acc_i), chained
    HISTORY = "history"  # the drafter's own earlier benchmarks
    MEASURED = "measured"  # the benchmarks' measured accept lengths


@dataclass(frozen=True)
class Setting:
    """What a speculative run drafts: algorithm, draft steps K, candidates per step (top-k) and tokens
    verified per round N. Normalised once: top-k absent means 1 (a chain)."""

    algorithm: str | None
    steps: int | None
    topk: int = 1
    draft_tokens: int | None = None

    @classmethod
    def of(
        cls, algorithm: str | None, steps: int | None, topk: int | None, draft_tokens: int | None
    ) -> "Setting":
        """A setting as stored or parsed (top-k may be missing)."""
        return cls(algorithm, steps, topk or 1, draft_tokens)

    @property
    def is_chain(self) -> bool:
        """One candidate per step; above one the draft is a tree."""
        return self.topk == 1

    @property
    def shape(self) -> str:
        """`3/1/4`: steps / top-k / draft tokens, `-` where unknown."""
        return "/".join("-" if v is None else str(v) for v in (self.steps, self.topk, self.draft_tokens))

    @property
    def label(self) -> str:
        """`EAGLE3 3/1/4`, or `no speculation` for a baseline."""
        return "no speculation" if self.algorithm is None else f"{self.algorithm} {self.shape}"
