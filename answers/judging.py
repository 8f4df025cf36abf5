"""The judging of a batch of benchmarks (judge_batch): their groups' predictions, each benchmark's gaps
against them and its verdict, from typed rows and the refresh's context, keyed by the domain's keys (a new
prediction or gap has no row id yet); the store writes what changed (answers/refresh.py)."""

from collections.abc import Mapping
from dataclasses import dataclass, field

from specdash.answers.gaps import AsJudged, as_judged, judge_gap, judgings
from specdash.answers.predicting import Predicted, PredictionCache, predict_group
from specdash.answers.verdicts import BenchmarkVerdict, best_verdict
from specdash.rows import BenchmarkRow, GapValues, Groups, PredictionKey, PredictionValues, RefreshContext

# A gap as the domain keys it: the benchmark, and its group's prediction from a source.
GapKey = tuple[int, PredictionKey, str]


@dataclass
class Judgement:
    """What judging a batch makes: the built-in predictions made, by (key, source); every gap, by
    (benchmark, key, source); each benchmark's verdict; how many predictions were made and how many
    benchmarks have none to be judged against (no baseline, no accept length, no active set)."""

    predictions: dict[tuple[PredictionKey, str], PredictionValues] = field(default_factory=dict)
    gaps: dict[GapKey, GapValues] = field(default_factory=dict)
    verdicts: dict[int, BenchmarkVerdict] = field(default_factory=dict)
    made: int = 0
    skipped: int = 0


def judge_batch(
    groups: Groups,
    context: RefreshContext,
    external: Mapping[PredictionKey, Mapping[str, PredictionValues]] | None = None,
) -> Judgement:
    """Each group's predictions under its deployment's active sets, and each of its benchmarks judged
    against those and against the `external` predictions stored for its key (compared with, never
    recomputed)."""
    cache = PredictionCache()
    judgement = Judgement()
    predictions = judgement.predictions
    for key, group in groups.items():
        predicted = predict_group(key, group, context, cache)
        for source, values, _, _ in predicted:
            predictions[(key, source)] = values
        own = external.get(key) if external else None
        if own:
            predicted += [Predicted(source, values, None, None) for source, values in own.items()]
        if predicted:
            _judge_group(judgement, key, group, predicted, context)
        else:
            judgement.skipped += len(group)
    judgement.made = cache.count
    return judgement


def _judge_group(
    judgement: Judgement,
    key: PredictionKey,
    group: list[BenchmarkRow],
    predicted: list[Predicted],
    context: RefreshContext,
) -> None:
    """The gaps and verdicts of one group's benchmarks."""
    # what every benchmark of the group shares is worked out once per prediction
    shared_judgings = judgings(key, predicted, context)
    # how a benchmark without a reference of its own is judged against each: worked out at the first
    shared: list[AsJudged | None] = [None] * len(shared_judgings)
    references = context.references
    reference_context = context.reference_contexts.get(key.deployment_id)
    gaps, verdicts = judgement.gaps, judgement.verdicts
    for bench in group:
        reference = references.get(bench.id)
        candidates = []
        for index, judging in enumerate(shared_judgings):
            if reference is not None:
                judged = as_judged(judging.prediction, reference, key)
            else:
                judged = shared[index] or as_judged(judging.prediction, None, key)
                shared[index] = judged
            values, candidate = judge_gap(bench, judging, judged, reference_context)
            gaps[(bench.id, key, candidate.source)] = values
            candidates.append(candidate)
        verdicts[bench.id] = best_verdict(key, candidates)
