"""The cost model: acceptance length, round time, throughput, gaps and their diagnoses. Pure Python."""

from specdash.costmodel.acceptance import (
    extend_rates,
    tau_chain,
    tau_iid,
    tau_survival,
)
from specdash.costmodel.diagnoses import Diagnosis, GapContext, diagnose
from specdash.costmodel.gaps import GapDecomposition, decompose
from specdash.costmodel.throughput import CostParams, RoundTime, Throughput, round_time, throughput

__all__ = [
    "CostParams",
    "Diagnosis",
    "GapContext",
    "GapDecomposition",
    "RoundTime",
    "Throughput",
    "decompose",
    "diagnose",
    "extend_rates",
    "round_time",
    "tau_chain",
    "tau_iid",
    "tau_survival",
    "throughput",
]
