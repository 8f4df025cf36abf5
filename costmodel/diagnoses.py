"""Rules that name the likely causes of a gap between predicted and measured throughput, and the verdict
that says whether a benchmark is an alert.

Each rule is a plain function of a GapContext returning a Diagnosis or None; add one to RULES to extend."""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from specdash.costmodel.context import CONTEXT_SLACK
from specdash.costmodel.domain import PredictionSource, Severity, TauSource
from specdash.costmodel.gaps import GapDecomposition

# A diagnosis's severity, most severe first: critical means the benchmark itself is likely invalid.
SEVERITIES = tuple(severity.value for severity in Severity)
SEVERITY_ORDER = {severity: rank for rank, severity in enumerate(SEVERITIES)}
# An alert's severity is its worst diagnosis's; "none" for an alert no rule explains.
ALERT_SEVERITIES = (*SEVERITIES, "none")

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
    # no run without speculation: the baseline was estimated from the depth sweep (costmodel/estimated.py)
    baseline_estimated: bool = False
    deployment: str = ""
    concurrency: int = 1
    # where the predicted accept length came from: training (acc_i), history (the drafter's other
    # benchmarks), external, or measured (nothing predicts it: the benchmark's own tau stands in)
    accept_length_source: str | None = None
    acceptance_reference: str = ""  # what the predicted accept length is, in words
    # what judges the benchmark: theory, calibrated (a fit to this deployment's benchmarks) or an external name
    prediction_source: str = PredictionSource.THEORY
    # the mean context the benchmark decoded at, and the deployment's median where its benchmarks span two
    context_tokens: float | None = None
    reference_context: float | None = None


# Names engines use for the same algorithm (SGLang runs NEXTN as EAGLE).
ALGORITHM_ALIASES = {"NEXTN": "EAGLE"}


@lru_cache(maxsize=256)  # a refresh asks twice per benchmark, of a handful of names
def normalised_algorithm(algorithm: str | None) -> str | None:
    """An algorithm's name as compared between a benchmark and its drafter: upper case, no dashes or
    underscores, engine aliases resolved (None when not given)."""
    if not algorithm:
        return None
    name = algorithm.strip().upper().replace("-", "").replace("_", "")
    return ALGORITHM_ALIASES.get(name, name)


def algorithm_mismatch(ctx: GapContext) -> Diagnosis | None:
    served, trained = (
        normalised_algorithm(ctx.benchmark_algorithm),
        normalised_algorithm(ctx.drafter_algorithm),
    )
    if not served or not trained or served == trained:
        return None
    return Diagnosis(
        "algorithm_mismatch",
        Severity.CRITICAL,
        f"the server ran {served} but the drafter is {trained}: benchmark likely invalid; "
        f"rerun with --speculative-algorithm {trained}",
    )


def hidden_size_mismatch(ctx: GapContext) -> Diagnosis | None:
    fed, expected = ctx.draft_hidden_size, ctx.drafter_hidden_size
    if not fed or not expected or fed == expected:
        return None
    return Diagnosis(
        "hidden_size_mismatch",
        Severity.CRITICAL,
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
        Severity.WARNING,
        f"{depth} draft steps but the drafter was trained {ctx.ttt_length} deep (TTT): "
        f"positions {ctx.ttt_length + 1}..{depth} are extrapolated; train deeper for this depth",
    )


def slower_than_baseline(ctx: GapContext) -> Diagnosis | None:
    d = ctx.decomposition
    if d is None or not ctx.baseline_tps or d.measured_tps >= ctx.baseline_tps:
        return None
    kind = "measured" if ctx.baseline_measured else "estimated" if ctx.baseline_estimated else "profile"
    return Diagnosis(
        "slower_than_baseline",
        Severity.WARNING,
        f"{d.measured_tps:.1f} tok/s is slower than no speculation ({ctx.baseline_tps:.1f} tok/s, {kind} "
        f"baseline): speculation costs {d.measured_tps / ctx.baseline_tps:.2f}x",
    )


def round_overhead(ctx: GapContext) -> Diagnosis | None:
    d = ctx.decomposition
    if d is None or d.gap < ctx.threshold or d.round_factor is None or d.acceptance_factor is None:
        return None
    if ctx.accept_length_source == "measured":
        return None  # acceptance is not predicted: acceptance_unknown says so instead
    if abs(1.0 - d.round_factor) <= abs(1.0 - d.acceptance_factor):
        return None  # acceptance explains more of the gap than round time
    acceptance = (
        "acceptance is as predicted"
        if abs(1.0 - d.acceptance_factor) <= ACCEPTANCE_TOLERANCE
        else f"acceptance is {d.acceptance_factor:.2f}x predicted"
    )
    return Diagnosis(
        "round_overhead",
        Severity.WARNING,
        f"the round takes {d.measured_round_ms:.1f} ms instead of {d.predicted_round_ms:.1f} ms: "
        f"{d.unexplained_ms:.1f} ms per round unexplained by the cost model; {acceptance} "
        f"({d.measured_accept_length:.2f} vs {d.predicted_accept_length:.2f})",
    )


def acceptance_shortfall(ctx: GapContext) -> Diagnosis | None:
    d = ctx.decomposition
    if d is None or d.acceptance_factor is None or d.acceptance_factor >= 1.0 - ACCEPTANCE_TOLERANCE:
        return None
    expected = "predicted"
    if ctx.accept_length_source == TauSource.HISTORY:
        expected = "expected"
        against = (
            f"the drafter accepts less here than {ctx.acceptance_reference or 'in its earlier benchmarks'}"
        )
    else:
        against = "the drafter accepts less here than in training" + (
            f" ({ctx.acceptance_reference})" if ctx.acceptance_reference else ""
        )
    return Diagnosis(
        "acceptance_shortfall",
        Severity.WARNING,
        f"accept length {d.measured_accept_length:.2f} measured vs {d.predicted_accept_length:.2f} "
        f"{expected} ({d.acceptance_factor:.2f}x): {against}",
    )


def acceptance_unknown(ctx: GapContext) -> Diagnosis | None:
    d = ctx.decomposition
    if d is None or ctx.accept_length_source != "measured" or abs(d.gap) < ctx.threshold:
        return None
    return Diagnosis(
        "acceptance_unknown",
        Severity.WARNING,
        f"nothing predicts this drafter's accept length here (no training metrics, no other benchmark of it "
        f"on this dataset and setting), so a drop in acceptance cannot be told from a slower round: at the "
        f"measured accept length {d.measured_accept_length:.2f} the round takes {d.measured_round_ms:.1f} ms "
        f"instead of {d.predicted_round_ms:.1f} ms",
    )


def context_mix(ctx: GapContext) -> Diagnosis | None:
    """A benchmark at a much longer (shorter) context than its deployment's others, measured slower (faster)
    than predicted: the prediction is for their median context, and each request's KV cache is read every
    forward (costmodel/context.py)."""
    d, context, reference = ctx.decomposition, ctx.context_tokens, ctx.reference_context
    if d is None or context is None or reference is None or abs(d.gap) < ctx.threshold:
        return None
    longer, shorter = context > reference * CONTEXT_SLACK, context < reference / CONTEXT_SLACK
    if not ((longer and d.gap > 0) or (shorter and d.gap < 0)):
        return None
    return Diagnosis(
        "context_mix",
        Severity.INFO,
        f"decoded at a mean context of {context:,.0f} tokens, {'longer' if longer else 'shorter'} than the "
        f"{reference:,.0f} of this deployment's benchmarks, which the prediction is for: every forward reads "
        f"each request's KV cache, so a {'longer' if longer else 'shorter'} context runs "
        f"{'slower' if longer else 'faster'} (`specdash schedule --context {context:.0f}` predicts it there)",
    )


def faster_than_predicted(ctx: GapContext) -> Diagnosis | None:
    d = ctx.decomposition
    if d is None or d.gap > -ctx.threshold:
        return None
    above = f"{d.measured_tps:.1f} tok/s is {-d.gap:.0%} above the"
    if ctx.prediction_source == PredictionSource.CALIBRATED:
        # calibrating again would not help: the fit already saw this deployment's benchmarks
        message = (
            f"{above} calibrated prediction {d.predicted_tps:.1f}: the calibration under-predicts this "
            "setting; compare its load, depth and dataset with the benchmarks it was fitted to"
        )
    elif ctx.prediction_source == PredictionSource.THEORY:
        message = (
            f"{above} predicted {d.predicted_tps:.1f}: the model is too pessimistic for this deployment; "
            "calibrate it"
        )
    else:
        message = (
            f"{above} prediction {d.predicted_tps:.1f} of {ctx.prediction_source}: it is too pessimistic here"
        )
    return Diagnosis("faster_than_predicted", Severity.INFO, message)


def no_baseline(ctx: GapContext) -> Diagnosis | None:
    if ctx.baseline_measured:
        return None
    if ctx.baseline_estimated and ctx.baseline_tps:
        profile = f"{ctx.baseline_tps:.1f} tok/s estimated from its speculative benchmarks"
    elif ctx.baseline_tps:
        profile = f"the profile's {ctx.baseline_tps:.1f} tok/s"
    else:
        profile = "no baseline at all"
    return Diagnosis(
        "no_baseline",
        Severity.INFO,
        f"no no-speculation benchmark on {ctx.deployment or 'this deployment'} at concurrency "
        f"{ctx.concurrency}; the prediction uses {profile}",
    )


Rule = Callable[[GapContext], Diagnosis | None]
RULES: list[Rule] = [
    algorithm_mismatch,
    hidden_size_mismatch,
    beyond_trained_depth,
    slower_than_baseline,
    round_overhead,
    acceptance_shortfall,
    acceptance_unknown,
    context_mix,
    faster_than_predicted,
    no_baseline,
]
# A rule's name is the code of the diagnosis it gives (a test holds every rule to it).
DIAGNOSIS_CODES = tuple(rule.__name__ for rule in RULES)

# Diagnoses that make a benchmark invalid or out of the drafter's range, whatever its gap: always an alert.
CONFIGURATION_CODES = ("algorithm_mismatch", "hidden_size_mismatch", "beyond_trained_depth")
# Which diagnosis leads an alert (and is what a mute matches): a cause before a symptom.
LEAD_ORDER = (
    *CONFIGURATION_CODES,
    "acceptance_shortfall",
    "context_mix",
    "round_overhead",
    "acceptance_unknown",
    "slower_than_baseline",
    "faster_than_predicted",
    "no_baseline",
)
LEAD_RANK = {code: rank for rank, code in enumerate(LEAD_ORDER)}
# How far past its limit a gap is, in multiples of the limit, for each severity (below the first: info).
EXCESS_WARNING = 1.5
EXCESS_CRITICAL = 3.0
# An accept length this far below the drafter's own history is an alert whatever the throughput gap.
HISTORY_SHORTFALL = ACCEPTANCE_TOLERANCE


def diagnose(ctx: GapContext, rules: Sequence[Rule] | None = None) -> list[Diagnosis]:
    """Every diagnosis that applies, most severe first."""
    found = [d for rule in (rules or RULES) if (d := rule(ctx)) is not None]
    if len(found) < 2:  # most benchmarks: none or one (sorting is stable, so this is the same list)
        return found
    return sorted(found, key=_severity_rank)


def _severity_rank(diagnosis: Diagnosis) -> int:
    return SEVERITY_ORDER[diagnosis.severity]


def worst_severity(diagnoses: list[Diagnosis]) -> str | None:
    if len(diagnoses) == 1:  # most diagnosed gaps: one
        return diagnoses[0].severity
    return min((d.severity for d in diagnoses), key=SEVERITY_ORDER.__getitem__, default=None)


def _worst(*severities: str | None) -> str | None:
    return min((s for s in severities if s), key=SEVERITY_ORDER.__getitem__, default=None)


@dataclass(slots=True)
class Verdict:
    """Whether a benchmark is an alert against the prediction it is judged on, how severe, and why."""

    is_alert: bool
    severity: str | None
    code: str | None  # the leading diagnosis
    reason: str


def _excess_severity(excess: float) -> str:
    if excess >= EXCESS_CRITICAL:
        return Severity.CRITICAL
    return Severity.WARNING if excess >= EXCESS_WARNING else Severity.INFO


def judge(
    gap: float,
    threshold: float,
    band: float | None,
    diagnoses: list[Diagnosis],
    acceptance_factor: float | None = None,
    accept_length_source: str | None = None,
) -> Verdict:
    """The alert rule. A gap is an anomaly when |gap| is at or above the user's threshold and beyond the
    prediction's own error band (relative |measured/predicted - 1| the model expects; None: unknown);
    its severity grows with |gap| / max(threshold, band): info below 1.5x, warning below 3x, critical
    beyond (a faster-than-predicted gap stays info: nothing is wrong with the benchmark). An accept
    length more than 5 % below the drafter's own history is an anomaly too (warning past 1.5x that).
    A configuration diagnosis makes an alert whatever the gap."""
    size = abs(gap)
    limit = max(threshold, band or 0.0)
    excess = size / limit if limit > 0 else float("inf")
    gap_alert = size >= threshold and (band is None or size > band)
    parts, severity = [], None
    if gap_alert:
        gap_severity = Severity.INFO if gap < 0 else _excess_severity(excess)
        severity = gap_severity
        band_text = f" and the prediction's error band ±{band:.0%}" if band else ""
        parts.append(f"gap {gap:+.1%} exceeds the threshold {threshold:.0%}{band_text} ({excess:.1f}x)")
    shortfall = 1.0 - acceptance_factor if acceptance_factor is not None else 0.0
    if accept_length_source == TauSource.HISTORY and shortfall > HISTORY_SHORTFALL:
        severity = _worst(
            severity, Severity.WARNING if shortfall >= EXCESS_WARNING * HISTORY_SHORTFALL else Severity.INFO
        )
        parts.append(f"accept length {shortfall:.0%} below the drafter's history")
    lead = None
    if diagnoses:  # most benchmarks have none: nothing to lead with
        configuration = [d for d in diagnoses if d.code in CONFIGURATION_CODES]
        if configuration:
            severity = _worst(severity, *(d.severity for d in configuration))
            parts.insert(
                0, f"{configuration[0].code}: an invalid or out-of-range benchmark alerts whatever its gap"
            )
        leads = [d.code for d in diagnoses if d.code in LEAD_RANK]
        lead = min(leads, key=LEAD_RANK.__getitem__) if leads else None
    if parts:
        return Verdict(True, severity, lead, "; ".join(parts))
    if size < threshold:
        why = f"gap {gap:+.1%} is within the threshold {threshold:.0%}"
    else:
        why = f"gap {gap:+.1%} is past the threshold {threshold:.0%} but within the prediction's error band ±{band:.0%}"
    return Verdict(False, None, lead, why)


def has_critical(diagnoses: list[Diagnosis]) -> bool:
    """A critical diagnosis says the benchmark itself is likely invalid (calibration leaves it out)."""
    return any(d.severity == Severity.CRITICAL for d in diagnoses)
