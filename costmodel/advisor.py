"""Depth advice for a drafter in training: the draft depth a deployment wants for the drafter's acceptance
curve, against the depth (TTT length) the drafter is being trained to."""

from collections.abc import Sequence
from dataclasses import dataclass

from specdash.costmodel.depth import DepthPoint, depth_sweep, optimal_depth
from specdash.costmodel.loadmodel import LoadParams
from specdash.costmodel.schedule import load_depth_sweep
from specdash.costmodel.throughput import CostParams

# Deepest draft the advisor considers: deep chains on PCIe boxes run 10-16 draft tokens.
MAX_ADVISED_STEPS = 16
# A deeper TTT costs training time; below this gain in tok/s the trained depth is called fine.
DEFAULT_MIN_GAIN = 0.05
# Until a run has logged training accuracies this many steps in, they say little about where it ends
# (the first hundreds of steps sit far below the final curve), so its family's published curve stands in.
CURVE_MIN_STEPS = 1000


@dataclass(frozen=True)
class PriorCurve:
    family: str
    rates: tuple[float, ...]  # conditional acceptance per draft position, 0-based
    source: str


# EAGLE-3 is trained with training-time test, so its acceptance barely falls with the position: the
# EAGLE-3 paper (Li et al. 2025, "EAGLE-3: Scaling up Inference Acceleration of Large Language Models via
# Training-Time Test", the n-alpha figure for LLaMA-Instruct 3.1 8B on MT-bench) shows about 0.75-0.8 at
# every n from 0 to 6. Read off that figure as a flat 0.78.
EAGLE3_PRIOR = PriorCurve(
    "EAGLE3",
    (0.78,) * 7,
    "EAGLE-3 paper (Li et al. 2025), n-alpha on MT-bench with LLaMA-Instruct 3.1 8B: about 0.78 at n = 0..6",
)
PRIORS = {"EAGLE3": EAGLE3_PRIOR}


def prior_curve(family: str | None) -> PriorCurve:
    """The published curve of a drafter family; EAGLE-3's for a family without its own."""
    return PRIORS.get((family or "").upper(), EAGLE3_PRIOR)


def choose_curve(
    training_rates: Sequence[float], logged_steps: int | None, family: str | None
) -> tuple[tuple[float, ...], str]:
    """The acceptance curve to advise on and where it came from ('training' or 'prior'): the run's own
    training accuracies once it has logged them for CURVE_MIN_STEPS steps, else its family's prior."""
    if training_rates and logged_steps is not None and logged_steps >= CURVE_MIN_STEPS:
        return tuple(training_rates), "training"
    return prior_curve(family).rates, "prior"


@dataclass(frozen=True)
class DepthAdvice:
    trained_depth: int
    best: DepthPoint
    at_trained: DepthPoint
    min_gain: float

    @property
    def gain(self) -> float:
        """How much more tok/s the best depth gives than the trained one (0.14 = 14 %)."""
        return self.best.tps / self.at_trained.tps - 1.0

    @property
    def suggested_ttt(self) -> int:
        return self.best.steps

    @property
    def time_factor(self) -> float:
        """Training time of TTT K against TTT T: the drafter's forward and backward repeat once per TTT
        position, so its part of a step grows as K / T (an upper bound when the target's forward, paid
        once per step in online training, is a large share)."""
        return self.best.steps / self.trained_depth

    @property
    def advise(self) -> bool:
        """Worth raising: the deployment wants deeper drafts than trained, by at least min_gain."""
        return self.best.steps > self.trained_depth and self.gain >= self.min_gain

    def message(self, deployment: str) -> str:
        t, k = self.trained_depth, self.best.steps
        return (
            f"trained {t} deep; on {deployment} the best depth for this curve is {k}, worth ~{self.gain:.0%} "
            f"more tok/s than depth {t}; consider TTT >= {k} (about {self.time_factor:.1f}x the training time)"
        )


def advise_depth(
    params: CostParams,
    rates: Sequence[float],
    trained_depth: int,
    max_steps: int = MAX_ADVISED_STEPS,
    min_gain: float = DEFAULT_MIN_GAIN,
) -> DepthAdvice:
    """The cost model's depth sweep for the curve (chain drafts, positions past the curve extrapolated by
    its documented rule) and its optimum, compared with the trained depth."""
    if trained_depth < 1:
        raise ValueError(f"trained_depth must be >= 1, got {trained_depth}")
    points = depth_sweep(params, rates, max(max_steps, trained_depth))
    return DepthAdvice(trained_depth, optimal_depth(points), points[trained_depth - 1], min_gain)


def advise_depth_at_load(
    params: LoadParams,
    rates: Sequence[float],
    trained_depth: int,
    concurrency: float,
    drafter: str = "",
    max_steps: int = MAX_ADVISED_STEPS,
    min_gain: float = DEFAULT_MIN_GAIN,
) -> DepthAdvice:
    """advise_depth at one load a deployment serves under its load model: the schedule's depth at that
    batch size (costmodel/schedule.py) against the trained depth."""
    if trained_depth < 1:
        raise ValueError(f"trained_depth must be >= 1, got {trained_depth}")
    points = load_depth_sweep(params, rates, max(max_steps, trained_depth), concurrency, drafter)
    return DepthAdvice(trained_depth, optimal_depth(points), points[trained_depth - 1], min_gain)
