"""Gaps of benchmarks against their group's predictions: each split into its acceptance and round-time
parts and diagnosed by the cost model, as the values a gap row stores, with the candidate each gives the
benchmark's verdict (answers/verdicts.py)."""

from json.encoder import encode_basestring_ascii
from typing import NamedTuple

from specdash.answers.predicting import Predicted
from specdash.answers.verdicts import Candidate
from specdash.costmodel import (
    Diagnosis,
    GapContext,
    GapDecomposition,
    RoundTime,
    Throughput,
    decompose,
    diagnose,
    throughput,
)
from specdash.costmodel.context import decode_context
from specdash.costmodel.diagnoses import worst_severity
from specdash.costmodel.domain import TauSource
from specdash.costmodel.sources import choose_accept_length, training_reference
from specdash.rows import BenchmarkRow, GapValues, PredictionKey, PredictionValues, Reference, RefreshContext


class AsJudged(NamedTuple):
    """A prediction as a benchmark is judged against it (as_judged)."""

    result: Throughput | None  # None: an external prediction, whose throughput depends on the benchmark
    measured_tau: bool  # whether the gap is split by the benchmark's measured tau
    tau_source: str | None
    tau_text: str


class Judging(NamedTuple):
    """One prediction of a group as its benchmarks are judged against it: the prediction, what the
    diagnoses are given (the group's and the prediction's part; each benchmark sets its own fields), the
    alert threshold and the parameter set's version."""

    prediction: Predicted
    context: GapContext
    threshold: float
    version: int | None


def applicable_threshold(deployment_threshold: float | None, global_threshold: float) -> float:
    """The threshold a deployment's gaps are judged by: its own when set, else the global one
    (db/settings.threshold_sql says the same in SQL)."""
    return deployment_threshold if deployment_threshold is not None else global_threshold


def judgings(key: PredictionKey, predicted: list[Predicted], context: RefreshContext) -> list[Judging]:
    """The group's predictions as its benchmarks are judged against them."""
    deployment = context.deployments[key.deployment_id]
    drafter = context.drafters[key.checkpoint_id]
    threshold = applicable_threshold(deployment.gap_threshold, context.global_threshold)
    measured_baseline = context.baselines.lookup(key.deployment_id, key.concurrency, key.dataset)
    out = []
    for prediction in predicted:
        pred = prediction.values
        gap_context = GapContext(
            decomposition=None,
            threshold=threshold,
            drafter_algorithm=drafter.speculative_algorithm,
            drafter_hidden_size=drafter.hidden_size,
            num_steps=key.steps,
            num_draft_tokens=key.draft_tokens,
            ttt_length=drafter.ttt_length,
            baseline_tps=measured_baseline or pred.baseline_tps or deployment.baseline_tps,
            baseline_measured=measured_baseline is not None,
            baseline_estimated=measured_baseline is None and bool(pred.baseline_estimated),
            deployment=deployment.name,
            concurrency=key.concurrency,
            prediction_source=prediction.source,
        )
        version = context.versions.get(pred.parameter_set_id) if pred.parameter_set_id is not None else None
        out.append(Judging(prediction, gap_context, threshold, version))
    return out


def as_judged(prediction: Predicted, reference: Reference | None, key: PredictionKey) -> AsJudged:
    """The prediction as a benchmark with this accept-length reference of its own (None: none) is
    judged against it: its throughput (None for an external one: it depends on the benchmark), whether
    the gap is split by the benchmark's measured tau, and where the predicted tau came from (source and
    the text a diagnosis cites)."""
    pred, result = prediction.values, prediction.result
    if result is None:  # external: only its tok/s and perhaps tau and round time are known
        # no predicted tau to split the gap against without one
        return AsJudged(None, pred.accept_length is not None, pred.accept_length_source, "")
    if pred.accept_length_source == TauSource.TRAINING:
        # training rates come first (choose_accept_length): the prediction's own tau, whatever the reference
        assert pred.accept_length is not None  # a prediction from training rates stores its tau
        return AsJudged(result, True, TauSource.TRAINING, training_reference(pred.accept_length))
    # the prediction has its key's accept length; this benchmark may have a reference of its own
    tau = choose_accept_length(None, reference, (pred.accept_length,) if pred.accept_length else ())
    if tau is None:
        return AsJudged(result, True, pred.accept_length_source, "")
    if tau.accept_length != result.accept_length:
        assert prediction.params is not None  # computed predictions carry their costs
        result = throughput(prediction.params, tau.accept_length, key.steps, key.draft_tokens, key.topk)
    return AsJudged(result, True, tau.source, tau.reference)


def judge_gap(
    bench: BenchmarkRow, judging: Judging, judged: AsJudged, reference_context: float | None
) -> tuple[GapValues, Candidate]:
    """One benchmark against one prediction: its gap, and the candidate for its verdict."""
    prediction = judging.prediction
    pred = prediction.values
    result, split, tau_source, tau_text = judged
    if result is None:
        result = external_throughput(pred, bench)
    decomposition = decompose(result, bench.decode_tps, bench.accept_length if split else None)
    # the group's context with this benchmark's part set (diagnose keeps nothing of it)
    gap_context = judging.context
    gap_context.decomposition = decomposition
    gap_context.benchmark_algorithm = bench.speculative_algorithm
    gap_context.draft_hidden_size = bench.draft_hidden_size
    gap_context.accept_length_source = tau_source
    gap_context.acceptance_reference = tau_text
    gap_context.context_tokens = decode_context(bench.input_tokens, bench.output_tokens)
    gap_context.reference_context = reference_context
    diagnoses = diagnose(gap_context)
    candidate = Candidate(
        prediction.source,
        decomposition.gap,
        judging.threshold,
        pred.error_band,
        diagnoses,
        decomposition.acceptance_factor,
        tau_source,
        judging.version,
    )
    return gap_values(decomposition, diagnoses), candidate


def gap_values(decomposition: GapDecomposition, diagnoses: list[Diagnosis]) -> GapValues:
    """A gap's values as stored: diagnoses as their JSON text (compared as text, never decoded)."""
    d = decomposition
    text = diagnoses_json(diagnoses)
    return GapValues(
        d.gap,
        d.measured_tps,
        d.predicted_tps,
        d.measured_round_ms,
        d.predicted_round_ms,
        d.acceptance_factor,
        d.round_factor,
        d.unexplained_ms,
        text,
        worst_severity(diagnoses) if diagnoses else None,
    )


def diagnoses_json(diagnoses: list[Diagnosis]) -> str:
    """The diagnoses as the JSON text a gap stores: json.dumps of their dicts, character for character
    (a full refresh compares it with the stored text), written by hand at a third of the cost."""
    if not diagnoses:
        return "[]"
    quote = encode_basestring_ascii
    return (
        "["
        + ", ".join(
            f'{{"code": {quote(d.code)}, "severity": {quote(d.severity)}, "message": {quote(d.message)}}}'
            for d in diagnoses
        )
        + "]"
    )


def external_throughput(pred: PredictionValues, bench: BenchmarkRow) -> Throughput:
    """An external prediction's throughput for this benchmark: its tok/s, and its tau and round where it
    states them (else the benchmark's tau, and the round they imply)."""
    tau = pred.accept_length or bench.accept_length or 1.0
    round_ms = pred.round_ms or 1000.0 * tau / pred.predicted_tps
    return Throughput(
        accept_length=tau,
        round=RoundTime(compute_ms=round_ms, comm_ms=0.0, draft_ms=0.0, overhead_ms=0.0),
        tps=pred.predicted_tps,
        speedup=float("nan"),
        break_even_accept_length=float("nan"),
    )
