"""Expected-error bands of predictions: how far a measurement is likely to land from a prediction.

A band is relative: the expected |measured / predicted - 1| at BAND_COVERAGE (90 %) coverage. A calibrated
parameter set has held-out residuals (each benchmark predicted by a fit that did not see it), and its band is
their 90th percentile, pulled toward the prior's band when there are few of them. An uncalibrated (prior)
prediction takes the spread of published measurements around the priors (see costmodel/priors.py and the
priors table of docs/cost-model.md), wider when its accept length comes from training accuracies rather than from a
measurement."""

import math
from collections.abc import Sequence

from specdash.costmodel.domain import TauSource

BAND_COVERAGE = 0.9
# The round-time priors against published measurements (bench/costmodel_accuracy.py): 90 % of the
# uncalibrated |measured / predicted - 1| lie within this, accept length measured. The 90th percentile over
# the measurements the priors were not read from, the 233 held-out rows of tests/fixtures/published/
# corpus.json and SpecBundle's 440 benchmarks, is 44.4 % (34.0 % on the corpus rows alone; SpecBundle's
# MoE targets at batch 8 run up to ~2x faster than the priors' expert growth allows). A band the data does
# not support would raise alerts on clean benchmarks against an uncalibrated model; calibrate for narrow
# ones.
PRIOR_ROUND_BAND = 0.40
# Training accuracy -> serving acceptance adds its own spread (accept length predicted from acc_i):
# published drafters serve at 0.85-1.05x their training accept length (EAGLE-3 paper, SpecForge docs).
PRIOR_ACCEPTANCE_BAND = 0.12
# Held-out residuals of a fit with this many benchmarks weigh as much as the prior's band.
PRIOR_PSEUDO_COUNT = 5
# No band narrower than this: repeats of one benchmark differ by ~1-2 % run to run (a deployment's own
# repeats replace it: repeat_noise).
MIN_BAND = 0.02


def quantile(values: Sequence[float], q: float) -> float:
    """The q-quantile of `values` with linear interpolation (numpy's default), without numpy."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("no values")
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


# The band of a prediction from training accuracies: both spreads in quadrature.
PRIOR_TRAINING_BAND = math.hypot(PRIOR_ROUND_BAND, PRIOR_ACCEPTANCE_BAND)


def prior_error_band(accept_length_source: str | None = "measured") -> float:
    """The band of an uncalibrated prediction: the round-time priors' published spread, combined in
    quadrature with the acceptance spread when tau comes from training accuracies."""
    if accept_length_source == TauSource.TRAINING:
        return PRIOR_TRAINING_BAND
    return PRIOR_ROUND_BAND


def error_band(
    held_out_errors: Sequence[float] | None = None,
    accept_length_source: str | None = "measured",
    coverage: float = BAND_COVERAGE,
) -> float:
    """Expected |measured / predicted - 1| at `coverage`.

    With held-out relative errors of a calibration, their `coverage` quantile of |error|, shrunk toward the
    prior's band by PRIOR_PSEUDO_COUNT pseudo-observations (n residuals: (n q + n0 prior) / (n + n0)) so a
    fit to five benchmarks does not claim a 1 % band; without any, the prior's band."""
    prior = prior_error_band(accept_length_source)
    errors = [abs(e) for e in held_out_errors or () if math.isfinite(e)]
    if not errors:
        return prior
    n = len(errors)
    observed = quantile(errors, coverage)
    return max(MIN_BAND, (n * observed + PRIOR_PSEUDO_COUNT * prior) / (n + PRIOR_PSEUDO_COUNT))


def repeat_noise(groups: Sequence[Sequence[float]], coverage: float = BAND_COVERAGE) -> float | None:
    """The measurement noise repeats show: the `coverage` quantile of |x / mean - 1| over every measurement
    of every group of two or more (each group's own mean), shrunk toward MIN_BAND by PRIOR_PSEUDO_COUNT
    pseudo-observations as error_band shrinks a fit's residuals. None without a repeat."""
    deviations = [
        abs(x / mean - 1.0)
        for group in groups
        if len(group) > 1 and (mean := sum(group) / len(group)) > 0
        for x in group
    ]
    if not deviations:
        return None
    n = len(deviations)
    return (n * quantile(deviations, coverage) + PRIOR_PSEUDO_COUNT * MIN_BAND) / (n + PRIOR_PSEUDO_COUNT)


def with_noise(band: float, noise: float | None) -> float:
    """A prediction's band is never narrower than the noise its deployment's repeats show: no prediction
    can be trusted closer than two runs of one measurement agree."""
    return band if noise is None else max(band, noise)


def within_band(measured_tps: float, predicted_tps: float, band: float) -> bool:
    """Whether a measurement lies inside a prediction's band."""
    return abs(measured_tps / predicted_tps - 1.0) <= band


def extrapolated_band(band: float) -> float:
    """The band of a prediction at a load the deployment was never measured at: how its round grows with
    the batch there is the priors' guess, so the round-time priors' spread is added in quadrature."""
    return math.hypot(band, PRIOR_ROUND_BAND)
