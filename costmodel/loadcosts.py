"""A fitted load model as a calibrated set stores it (JSON) and as the batch-1 cost model reads it: the
round of costmodel/loadmodel.py at one load and setting stated as CostParams, so that gaps, their split
into acceptance and round time, and diagnoses work alike on every prediction."""

from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from specdash.costmodel.loadmodel import LoadParams
from specdash.costmodel.priors import TargetArchitecture
from specdash.costmodel.throughput import CostParams, verified_tokens

# LoadParams' numbers as stored; the architecture is the deployment's, read again with it
_NUMBERS = tuple(
    f.name for f in fields(LoadParams) if f.name not in ("architecture", "draft_step_ms_by_drafter")
)


def load_params_json(params: LoadParams) -> dict[str, Any]:
    """The fitted model's numbers, drafters' own draft costs as {drafter: ms}."""
    out: dict[str, Any] = {name: float(getattr(params, name)) for name in _NUMBERS}
    out["draft_step_ms_by_drafter"] = dict(params.draft_step_ms_by_drafter)
    return out


def load_params_from_json(
    stored: Mapping[str, Any], architecture: TargetArchitecture | None = None
) -> LoadParams:
    """The stored model again, on the deployment's target `architecture` (a MoE's expert routing)."""
    numbers = {name: float(stored[name]) for name in _NUMBERS if stored.get(name) is not None}
    drafters = stored.get("draft_step_ms_by_drafter") or {}
    return LoadParams(
        **numbers,
        architecture=architecture,
        draft_step_ms_by_drafter=tuple(sorted((str(k), float(v)) for k, v in drafters.items())),
    )


def cost_params_at(
    params: LoadParams,
    concurrency: float,
    steps: int,
    draft_tokens: int | None = None,
    topk: int = 1,
    drafter: str = "",
) -> CostParams:
    """The load model at batch B = `concurrency` and this setting as CostParams with the same round:
    baseline 1000 / T_base(B), drafting and overhead grown by L(B)^g, and the verify growth that makes
    T_base(B) (1 + b (N - 1)) equal F(B N, B). round_time() of the result is LoadParams.round_ms()."""
    batch = max(concurrency, 1.0)
    base_ms = params.base_step_ms(batch)
    verified = verified_tokens(steps, topk, draft_tokens) if steps > 0 else 1
    growth = 0.0
    if verified > 1:
        growth = max(params.forward_ms(batch * verified, batch) / base_ms - 1.0, 0.0) / (verified - 1)
    width = max(topk, 1)
    draft_ms = params.draft_step_for(drafter) * params.load_growth(batch * width)
    return CostParams(
        baseline_tps=1000.0 / base_ms,
        # the collectives' share of the step at this batch; one growth carries the whole forward
        comm_fraction=min(params.comm_fraction * params.step_ms / base_ms, 1.0),
        draft_step_ms=draft_ms,
        round_overhead_ms=params.overhead_ms * params.load_growth(batch),
        verify_growth_compute=growth,
        verify_growth_comm=growth,
        draft_branch_ms=0.0,
    )
