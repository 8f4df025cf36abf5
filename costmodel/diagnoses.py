"""Rules that name the likely causes of a gap between predicted and measured throughput.

Each rule is a plain function of a GapContext returning a Diagnosis or None; add one to RULES to extend."""

from collections.abc import Callable
from dataclasses import dataclass

from specdash.costmodel.gaps import GapDecomposition

# A diagnosis's severity, most severe first: critical means the benchmark itself is likely invalid.
SEVERITIES = ("critical", "warning", "info")
SEVERITY_ORDER = {severity: rank for rank, severity in enumerate(SEVERITIES)}

# Acceptance lengths within this relative tolerance count as "as predicted".
ACCEPTANCE_TOLERANCE = 0.05


@dataclass(slots=True)  # built once per benchmark: a frozen dataclass's __init__ costs 5x
class Diagnosis:
    code: str
    severity: str  # critical | warning | info
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "severity": self.severity, "message": self.message}


@dataclass(slots=True)  # built once per benchmark: a frozen dataclass's __init__ costs 5x
class GapContext:
    """What is known about one benchmark, its drafter and its prediction. Without a decomposition (no
    prediction yet, e.g. when calibration screens benchmarks) only the rules about the setting apply."""

    decomposition: GapDecomposition | None
    threshold: float = 0.10
    benchmark_algorithm: str | None = None
    drafter_algorithm: str | None = None
    draft_hidden_size: int | None = None
    drafter_hidden_size: int | None = None
    num_steps: int | None = None
    num_draft_tokens: int | None = None
    ttt_length: int | None = None
    baseline_tps: float | None = None
    baseline_measured: bool = False
    deployment: str = ""
    concurrency: int = 1


# Names engines use for the same algorithm (SGLang runs NEXTN as EAGLE).
ALGORITHM_ALIASES = {"NEXTN": "EAGLE"}


def _norm(algorithm: str | None) -> str | None:
    if not algorithm:
        return None
    name = algorithm.strip().upper().replace("-", "").replace("_", "")
    return ALGORITHM_ALIASES.get(name, name)


def algorithm_mismatch(ctx: GapContext) -> Diagnosis | None:
    served, trained = _norm(ctx.benchmark_algorithm), _norm(ctx.drafter_algorithm)
    if not served or not trained or served == trained:
        return None
    return Diagnosis(
        "algorithm_mismatch",
        "critical",
        f"the server ran {served} but the drafter is {trained}: benchmark likely invalid; "
        f"rerun with --speculative-algorithm {trained}",
    )


def hidden_size_mismatch(ctx: GapContext) -> Diagnosis | None:
    fed, expected = ctx.draft_hidden_size, ctx.drafter_hidden_size
    if not fed or not expected or fed == expected:
        return None
    return Diagnosis(
        "hidden_size_mismatch",
        "critical",
        f"the drafter was fed {fed}-dim hidden states but was trained on {expected}: benchmark likely invalid",
    )


def beyond_trained_depth(ctx: GapContext) -> Diagnosis | None:
    if not ctx.num_steps or not ctx.ttt_length:
        return None
    # a tree verifying N tokens cannot reach deeper than N - 1, whatever the step count
    depth = min(ctx.num_steps, ctx.num_draft_tokens - 1) if ctx.num_draft_tokens else ctx.num_steps
    if depth <= ctx.ttt_length:
        return None
    return Diagnosis(
        "beyond_trained_depth",
        "warning",
        f"{depth} draft steps but the drafter was trained {ctx.ttt_length} deep (TTT): "
        f"positions {ctx.ttt_length + 1}..{depth} are extrapolated; train deeper for this depth",
    )


def slower_than_baseline(ctx: GapContext) -> Diagnosis | None:
    d = ctx.decomposition
    if d is None or not ctx.baseline_tps or d.measured_tps >= ctx.baseline_tps:
        return None
    kind = "measured" if ctx.baseline_measured else "profile"
    return Diagnosis(
        "slower_than_baseline",
        "warning",
        f"{d.measured_tps:.1f} tok/s is slower than no speculation ({ctx.baseline_tps:.1f} tok/s, {kind} "
        f"baseline): speculation costs {d.measured_tps / ctx.baseline_tps:.2f}x",
    )


def round_overhead(ctx: GapContext) -> Diagnosis | None:
    d = ctx.decomposition
    if d is None or d.gap < ctx.threshold or d.round_factor is None or d.acceptance_factor is None:
        return None
    if abs(1.0 - d.round_factor) <= abs(1.0 - d.acceptance_factor):
        return None  # acceptance explains more of the gap than round time
    acceptance = (
        "acceptance is as predicted"
        if abs(1.0 - d.acceptance_factor) <= ACCEPTANCE_TOLERANCE
        else f"acceptance is {d.acceptance_factor:.2f}x predicted"
    )
    return Diagnosis(
        "round_overhead",
        "warning",
        f"the round takes {d.measured_round_ms:.1f} ms instead of {d.predicted_round_ms:.1f} ms: "
        f"{d.unexplained_ms:.1f} ms per round unexplained by the cost model; {acceptance} "
        f"({d.measured_accept_length:.2f} vs {d.predicted_accept_length:.2f})",
    )


def acceptance_shortfall(ctx: GapContext) -> Diagnosis | None:
    d = ctx.decomposition
    if d is None or d.acceptance_factor is None or d.acceptance_factor >= 1.0 - ACCEPTANCE_TOLERANCE:
        return None
    return Diagnosis(
        "acceptance_shortfall",
        "warning",
        f"accept length {d.measured_accept_length:.2f} measured vs {d.predicted_accept_length:.2f} "
        f"predicted ({d.acceptance_factor:.2f}x): the drafter accepts less here than in training",
    )


def faster_than_predicted(ctx: GapContext) -> Diagnosis | None:
    d = ctx.decomposition
    if d is None or d.gap > -ctx.threshold:
        return None
    return Diagnosis(
        "faster_than_predicted",
        "info",
        f"{d.measured_tps:.1f} tok/s is {-d.gap:.0%} above the predicted {d.predicted_tps:.1f}: "
        "the model is too pessimistic for this deployment; calibrate it",
    )


def no_baseline(ctx: GapContext) -> Diagnosis | None:
    if ctx.baseline_measured:
        return None
    profile = f"the profile's {ctx.baseline_tps:.1f} tok/s" if ctx.baseline_tps else "no baseline at all"
    return Diagnosis(
        "no_baseline",
        "info",
        f"no no-speculation benchmark on {ctx.deployment or 'this deployment'} at concurrency "
        f"{ctx.concurrency}; the prediction uses {profile}",
    )


RULES: list[Callable[[GapContext], Diagnosis | None]] = [
    algorithm_mismatch,
    hidden_size_mismatch,
    beyond_trained_depth,
    slower_than_baseline,
    round_overhead,
    acceptance_shortfall,
    faster_than_predicted,
    no_baseline,
]
# A rule's name is the code of the diagnosis it gives (a test holds every rule to it).
DIAGNOSIS_CODES = tuple(rule.__name__ for rule in RULES)


def diagnose(ctx: GapContext, rules=None) -> list[Diagnosis]:
    """Every diagnosis that applies, most severe first."""
    found = [d for rule in (rules or RULES) if (d := rule(ctx)) is not None]
    return sorted(found, key=lambda d: SEVERITY_ORDER[d.severity])


def worst_severity(diagnoses: list[Diagnosis]) -> str | None:
    return min((d.severity for d in diagnoses), key=SEVERITY_ORDER.__getitem__, default=None)


def has_critical(diagnoses: list[Diagnosis]) -> bool:
    """A critical diagnosis says the benchmark itself is likely invalid (calibration leaves it out)."""
    return any(d.severity == "critical" for d in diagnoses)
