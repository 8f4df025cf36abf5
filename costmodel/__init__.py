"""The cost model: acceptance length, round time, throughput, gaps, diagnoses and calibration. No database,
no Streamlit: plain functions of numbers."""

from typing import TYPE_CHECKING

from specdash.costmodel.acceptance import (
    EXTRAPOLATION_DECAY,
    AcceptLength,
    conditional_from_survival,
    extend_rates,
    predict_accept_length,
    tau_chain,
    tau_from_simulated_acc_len,
    tau_iid,
    tau_survival,
    tree_shape,
)
from specdash.costmodel.depth import DepthPoint, depth_sweep, optimal_depth
from specdash.costmodel.diagnoses import (
    CONFIGURATION_CODES,
    RULES,
    Diagnosis,
    GapContext,
    Verdict,
    diagnose,
    has_critical,
    judge,
)
from specdash.costmodel.gaps import GapDecomposition, decompose, measured_round_ms
from specdash.costmodel.throughput import (
    CostParams,
    RoundTime,
    Throughput,
    round_time,
    throughput,
    verified_tokens,
)

# Calibration needs numpy (and scipy to fit); it loads on first use, not with every prediction.
_CALIBRATION = (
    "CalibrationFit",
    "CalibrationObservation",
    "FittedParams",
    "NotEnoughObservations",
    "fit_calibration",
    "fit_draft_costs",
    "predict_observations",
)
if TYPE_CHECKING:  # a type checker sees the lazy names as what they are
    from specdash.costmodel.calibration import (
        CalibrationFit,
        FittedParams,
        fit_calibration,
        fit_draft_costs,
        predict_observations,
    )
    from specdash.costmodel.observations import CalibrationObservation, NotEnoughObservations


def __getattr__(name: str) -> object:
    if name in _CALIBRATION:
        from specdash.costmodel import calibration

        return getattr(calibration, name)
    raise AttributeError(f"module 'specdash.costmodel' has no attribute {name!r}")


__all__ = [
    "CONFIGURATION_CODES",
    "EXTRAPOLATION_DECAY",
    "RULES",
    "AcceptLength",
    "CalibrationFit",
    "CalibrationObservation",
    "CostParams",
    "DepthPoint",
    "Diagnosis",
    "FittedParams",
    "GapContext",
    "GapDecomposition",
    "NotEnoughObservations",
    "RoundTime",
    "Throughput",
    "Verdict",
    "conditional_from_survival",
    "decompose",
    "depth_sweep",
    "diagnose",
    "extend_rates",
    "fit_calibration",
    "fit_draft_costs",
    "has_critical",
    "judge",
    "measured_round_ms",
    "optimal_depth",
    "predict_accept_length",
    "predict_observations",
    "round_time",
    "tau_chain",
    "tau_from_simulated_acc_len",
    "tau_iid",
    "tau_survival",
    "throughput",
    "tree_shape",
    "verified_tokens",
]
