"""Round time as a function of batch and depth: one model of a deployment at every load, fitted from every
benchmark it has at every load, no-speculation runs included (a round of depth 0).

A target forward over n batched tokens costs (DESIGN.md section 3, load):

    F(n, B)   = T1 * ((1 - f) * shape(n) + f + floor * (n - 1) + rfloor * (B - 1))
    shape(n)  = sqrt(1 + (n / knee)^2) / sqrt(1 + (1 / knee)^2)       dense: flat while weights dominate,
                (1 - m) * dense + m * experts(n) / k                 MoE: m of it reads the experts routed to
    T_base(B) = F(B, B)                                              the no-speculation step at batch B
    T_round   = F(B N, B) + L(B)^g * (K * t_draft[drafter] + t_over) L(B) = F(B, B) / T1

B is the mean number of requests in flight (any real B >= 1, not only measured levels), N the tokens one
verify scores (K + 1 for a chain), K the draft steps. Verify cost grows with B x N through the roofline and
the per-token floor, and with B alone through the per-request floor (each request's KV cache is read once
per forward however many of its tokens are verified): a step's growth with the batch need not all come
back N-fold in a verify. Drafting and the round's bookkeeping run over the whole batch and grow with it as
the step does, to the power g (1: as fast as the step, 0: not at all). The draft step cost belongs to the drafter
(one per run: its checkpoints share the architecture), the rest to the deployment. With g = 1 and one load
this is costmodel/calibration.py's round with `load_scale`; the linear round model
a + b K + B (c + d K) is the same structure with the roofline flattened to a line.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from specdash.costmodel.observations import NotEnoughObservations
from specdash.costmodel.priors import (
    DEFAULT_FAMILY,
    MOE_EXPERT_SHARE,
    VERIFY_TOKEN_FLOOR,
    DeploymentFacts,
    TargetArchitecture,
    distinct_experts,
    prior_comm_fraction,
    prior_costs,
)
from specdash.costmodel.throughput import verified_tokens

# Drafting and overhead grow with the batch as the step does (g = 1): fitted at one request and scaled
# this way, the published cross-load pairs are predicted twice as well as with costs held in ms
# (bench/costmodel_accuracy.py load_transfer: 10.3 % against 20.1 % at 8 requests).
LOAD_EXPONENT = 1.0
LOAD_EXPONENT_BOUNDS = (0.0, 1.5)
KNEE_BOUNDS = (1.0, 20000.0)
EXPERT_SHARE_BOUNDS = (0.0, 1.0)
FLOOR_BOUNDS = (0.0, 0.05)
# Per request in flight, share of T1 paid once per forward however many tokens each request verifies
# (its KV cache read by attention, its sampling and bookkeeping): 0 until two loads' data say otherwise.
REQUEST_FLOOR = 0.0
# The pull of each parameter toward its prior, per natural unit (see _SCALES): a departure of one unit
# weighs like one benchmark 5 % off times this. Deployment costs are pulled weakly (the data decide),
# a drafter's cost like calibration.py's DRAFTER_PRIOR_WEIGHT, and the roofline's knee and the load
# exponent harder: a sweep at one load, or at one depth, cannot tell them apart from the rest.
PRIOR_WEIGHTS = {
    "step_ms": 0.005,
    "overhead_ms": 0.02,
    "draft_step_ms": 0.05,
    "knee_log": 0.01,
    "token_floor": 0.02,
    "request_floor": 0.02,
    "load_exponent": 0.1,
    "expert_share": 0.05,
}
DRAFTER_PREFIX = "draft_step_ms:"


@dataclass(frozen=True)
class LoadParams:
    """A deployment's round as a function of batch and depth. Times in ms at batch 1."""

    step_ms: float  # T1: the no-speculation decode step of one request alone
    knee_tokens: float  # batched tokens at which compute catches up with the weight reads
    draft_step_ms: float  # one draft step (drafters not in draft_step_ms_by_drafter)
    overhead_ms: float  # per round beyond drafting and verifying
    token_floor: float = VERIFY_TOKEN_FLOOR  # per extra batched token, share of T1 (attention, KV writes)
    comm_fraction: float = 0.0  # share f of T1 in TP collectives (paid once per forward)
    request_floor: float = REQUEST_FLOOR  # per extra request in flight, share of T1 (once per forward)
    load_exponent: float = LOAD_EXPONENT
    architecture: TargetArchitecture | None = None
    # share of a MoE target's compute that reads the distinct experts a forward routes to
    expert_share: float = MOE_EXPERT_SHARE
    draft_step_ms_by_drafter: tuple[tuple[str, float], ...] = ()

    def __post_init__(self) -> None:
        if not (self.step_ms > 0 and math.isfinite(self.step_ms)):
            raise ValueError(f"step_ms must be a positive number, got {self.step_ms}")
        if not self.knee_tokens > 0:
            raise ValueError(f"knee_tokens must be > 0, got {self.knee_tokens}")
        if not 0.0 <= self.comm_fraction <= 1.0:
            raise ValueError(f"comm_fraction must be in [0, 1], got {self.comm_fraction}")
        for name in (
            "draft_step_ms",
            "overhead_ms",
            "token_floor",
            "request_floor",
            "load_exponent",
            "expert_share",
        ):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")

    def draft_step_for(self, drafter: str) -> float:
        return dict(self.draft_step_ms_by_drafter).get(drafter, self.draft_step_ms)

    def forward_ms(self, tokens: float, requests: float | None = None) -> float:
        """F(n, B): one target forward over `tokens` batched tokens of `requests` requests (B x N verified
        each; without speculation every token is its own request)."""
        n = max(tokens, 1.0)
        b = n if requests is None else min(max(requests, 1.0), n)
        knee = self.knee_tokens
        shape = math.hypot(1.0, n / knee) / math.hypot(1.0, 1.0 / knee)
        arch = self.architecture
        if arch is not None and arch.is_moe and arch.num_experts and arch.experts_per_token:
            experts = distinct_experts(arch.num_experts, arch.experts_per_token, n) / arch.experts_per_token
            shape = (1.0 - self.expert_share) * shape + self.expert_share * experts
        f = self.comm_fraction
        per_token = self.token_floor * (n - 1.0) + self.request_floor * (b - 1.0)
        return self.step_ms * ((1.0 - f) * shape + f + per_token)

    def base_step_ms(self, concurrency: float) -> float:
        """T_base(B): the no-speculation step at `concurrency` requests in flight."""
        return self.forward_ms(concurrency)

    def load_growth(self, concurrency: float) -> float:
        """L(B)^g: how much longer drafting and overhead take at this load than for one request."""
        growth: float = (self.forward_ms(concurrency) / self.step_ms) ** self.load_exponent
        return growth

    def round_ms(
        self,
        concurrency: float,
        steps: int,
        draft_tokens: int | None = None,
        topk: int = 1,
        drafter: str = "",
    ) -> float:
        """One round at batch B = `concurrency`: the verify of B x N tokens, K draft steps (each over
        B x topk candidates), the overhead. K = 0 is a step without speculation (no overhead either)."""
        if steps <= 0:
            return self.base_step_ms(concurrency)
        verified = verified_tokens(steps, topk, draft_tokens)
        batch = max(concurrency, 1.0)
        drafting = steps * self.draft_step_for(drafter) * self.load_growth(batch * max(topk, 1))
        verify = self.forward_ms(batch * verified, batch)
        return verify + drafting + self.overhead_ms * self.load_growth(batch)

    def tps(
        self,
        accept_length: float,
        concurrency: float,
        steps: int,
        draft_tokens: int | None = None,
        topk: int = 1,
        drafter: str = "",
    ) -> float:
        """Per-request decode tok/s = 1000 tau / T_round (tau = 1 without speculation)."""
        tau = accept_length if steps > 0 else 1.0
        return 1000.0 * tau / self.round_ms(concurrency, steps, draft_tokens, topk, drafter)


@dataclass(frozen=True)
class LoadObservation:
    """One benchmark as the load fit sees it: per-request decode tok/s at a measured mean concurrency.
    A no-speculation benchmark has steps = 0 (and accept length 1)."""

    concurrency: float
    steps: int
    measured_tps: float
    accept_length: float = 1.0
    topk: int = 1
    draft_tokens: int | None = None
    drafter: str = ""
    label: str = ""

    def __post_init__(self) -> None:
        if not self.concurrency >= 1:
            raise ValueError(f"{self.label}: concurrency must be >= 1, got {self.concurrency}")
        if not self.measured_tps > 0:
            raise ValueError(f"{self.label}: measured tok/s must be > 0")
        if self.steps < 0 or self.topk < 1:
            raise ValueError(f"{self.label}: need steps >= 0 and topk >= 1")
        if self.steps and not self.accept_length >= 1:
            raise ValueError(f"{self.label}: a speculative benchmark needs an accept length >= 1")

    @property
    def speculative(self) -> bool:
        return self.steps > 0

    @property
    def measured_round_ms(self) -> float:
        return 1000.0 * (self.accept_length if self.speculative else 1.0) / self.measured_tps


def prior_load_params(
    facts: DeploymentFacts,
    step_ms: float,
    families: dict[str, str] | None = None,
    comm_fraction: float | None = None,
) -> LoadParams:
    """The priors of costmodel/priors.py as a load model, given the no-speculation step of one request
    (`step_ms`): draft cost by drafter family, overhead, the GPU's knee, the per-token floor, g = 1.
    `families` maps each drafter name to its family."""
    f = prior_comm_fraction(facts.tp_size, facts.interconnect) if comm_fraction is None else comm_fraction
    by_family = {family: prior_costs(facts, step_ms, family, 1, 4, f) for family in {DEFAULT_FAMILY}}
    per_drafter = {}
    for drafter, family in (families or {}).items():
        by_family.setdefault(family, prior_costs(facts, step_ms, family, 1, 4, f))
        per_drafter[drafter] = by_family[family].draft_step_ms
    default = by_family[DEFAULT_FAMILY]
    return LoadParams(
        step_ms=step_ms,
        knee_tokens=float(facts.knee),
        draft_step_ms=(
            sorted(per_drafter.values())[len(per_drafter) // 2] if per_drafter else default.draft_step_ms
        ),
        overhead_ms=default.round_overhead_ms,
        comm_fraction=f,
        architecture=facts.architecture,
        draft_step_ms_by_drafter=tuple(sorted(per_drafter.items())),
    )


def step_ms_from_observations(observations: Sequence[LoadObservation], prior: LoadParams) -> float:
    """T1 the observations imply under the prior's shape: each measured round divided by what the prior
    predicts for it at T1 = 1 ms, the median of those (no-speculation benchmarks first, they say it
    directly)."""
    if not observations:
        raise NotEnoughObservations("no benchmarks to read a step time from")
    unit = replace(prior, step_ms=1.0)
    plain = [o for o in observations if not o.speculative] or list(observations)
    # T_round is linear in T1 only when drafting and overhead are too: scale them with it
    scale = 1.0 / prior.step_ms
    unit = replace(
        unit,
        draft_step_ms=prior.draft_step_ms * scale,
        overhead_ms=prior.overhead_ms * scale,
        draft_step_ms_by_drafter=tuple((d, v * scale) for d, v in prior.draft_step_ms_by_drafter),
    )
    ratios = sorted(
        o.measured_round_ms / unit.round_ms(o.concurrency, o.steps, o.draft_tokens, o.topk, o.drafter)
        for o in plain
    )
    middle = len(ratios) // 2
    return ratios[middle] if len(ratios) % 2 else 0.5 * (ratios[middle - 1] + ratios[middle])


def rescale_prior(prior: LoadParams, step_ms: float) -> LoadParams:
    """The same prior at another T1: every ms cost scales with it (they are shares of a step)."""
    k = step_ms / prior.step_ms
    return replace(
        prior,
        step_ms=step_ms,
        draft_step_ms=prior.draft_step_ms * k,
        overhead_ms=prior.overhead_ms * k,
        draft_step_ms_by_drafter=tuple((d, v * k) for d, v in prior.draft_step_ms_by_drafter),
    )
