"""Published priors for an uncalibrated deployment: draft cost by drafter family, per-round overhead, the
share of a step in collectives, and verify growth from the target's architecture (dense or MoE) and load.

Every cost is relative to the no-speculation decode step (a "baseline step") so one prior serves any
hardware; docs/cost-model.md's priors table gives each value with the measurements it comes from."""

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cache, lru_cache
from typing import Any, NamedTuple

from specdash.costmodel.kvgeometry import known_kv_fields, kv_bytes_per_layer_token
from specdash.costmodel.throughput import CostParams

# Fixed cost per round beyond drafting and verifying (scheduling, tree building, sampling, KV bookkeeping):
# the intercept of vLLM's EAGLE K sweep (vllm-project/vllm#20780: round = 1.10 baseline steps at K = 0).
ROUND_OVERHEAD = 0.10
# Verifying each extra token costs at least this share of a step even far below the compute roof (tree
# attention masks, KV writes, N-way sampling): Spec-Bench's Medusa, 64 tokens verified, rounds of 1.30 steps.
VERIFY_TOKEN_FLOOR = 0.002
# Share of a MoE target's compute time that grows with the number of distinct experts a verify reads
# (the rest behaves like a dense model): the median over SpecBundle's seven MoE targets of the calibrated
# growth per verified token divided by the distinct-expert growth below (0.13-0.33, median 0.2).
MOE_EXPERT_SHARE = 0.2
# Collectives of N tokens' activations (N x hidden x 2 bytes, < 1 MB) stay latency-bound: no growth.
COMM_GROWTH = 0.0
# Draft cost falls with the target's size per GPU (one drafter layer against the target's whole step):
# Spec-Bench's EAGLE on Vicuna 7B/13B/33B (A100) drafts at 0.076/0.071/0.034 baseline steps.
SIZE_EXPONENT = 0.4
REFERENCE_PARAMS_PER_GPU_B = 8.0
SIZE_FACTOR_BOUNDS = (0.4, 1.6)
# Dense decode turns compute-bound near (peak dense bf16 FLOP/s) / (HBM bytes/s) tokens per step
# (2 FLOP and 2 bytes per parameter and token): vendor datasheets.
GPU_KNEE_TOKENS = {
    "h100": 295,
    "h200": 206,
    "h800": 295,
    "h20": 37,
    "b200": 280,
    "gb200": 280,
    "b300": 280,
    "a100": 156,
    "a800": 156,
    "l40s": 420,
    "l40": 210,
    "a10g": 208,
    "a10": 208,
    "rtx 3090": 76,
    "rtx 4090": 165,
    "rtx pro 6000": 280,
    "mi300x": 250,
}
DEFAULT_KNEE_TOKENS = 200
# Share of a step in TP collectives when the profile does not say: none on one GPU; the story's TP8 over
# PCIe spends about half a step in all-reduce (docs/cost-model.md), NVLink about an eighth.
COMM_FRACTION_BY_INTERCONNECT = {"pcie": 0.5, "nvlink": 0.12}
COMM_FRACTION_UNKNOWN_LINK = 0.15
# An eager PyTorch harness (the EAGLE repository, Spec-Bench, Hugging Face generate) runs the target without
# CUDA graphs, so its step is launch-bound and several times a serving engine's for the same model, while a
# one-layer drafter's few launches and the round's bookkeeping stay small: relative to the step, drafting
# and overhead cost these shares of a serving engine's. Fitted to the same drafters in two harnesses, each
# weighted equally: the EAGLE-2 paper's 12 Vicuna-7B rows and Spec-Bench's 21 A100 rows (Vicuna 7B/13B/33B)
# the other priors come from; `python -m bench.costmodel_accuracy` refits them.
EAGER_ENGINE = re.compile(r"pytorch|transformers|hugging ?face|\bhf\b|eager", re.IGNORECASE)
EAGER_DRAFT_FACTOR = 0.35
EAGER_OVERHEAD_FACTOR = 0.5


def harness_factors(engine: str | None) -> tuple[float, float]:
    """(draft, overhead) factors on the serving-engine priors for a deployment run by `engine`; an engine
    not named is taken for a serving engine (SGLang, vLLM, TensorRT-LLM), what specdash's users run."""
    if engine and EAGER_ENGINE.search(engine):
        return EAGER_DRAFT_FACTOR, EAGER_OVERHEAD_FACTOR
    return 1.0, 1.0


@dataclass(frozen=True)
class FamilyPrior:
    family: str
    # baseline steps per draft step (8B-per-GPU target, batch 1); a block drafter's one step drafts its whole
    # block, so for it this is the cost of a round's drafting
    draft_step: float
    extra_overhead: float  # baseline steps per round on top of ROUND_OVERHEAD
    source: str
    # proposes all its draft tokens in one step (DFlash, DSpark): tokens per step = draft tokens - 1, so
    # neither the accept-length bound nor the depth a round reaches is its steps + 1
    block: bool = False


FAMILIES = {
    prior.family: prior
    for prior in (
        FamilyPrior(
            "eagle3",
            0.13,
            0.0,
            "vLLM #20780 (H100, Llama-3.1-8B, K=2..7): +0.145 steps per extra "
            "draft step; SGLang #4247 (8 steps): 0.11",
        ),
        FamilyPrior(
            "eagle",
            0.085,
            0.0,
            "vLLM #20780 EAGLE-1: +0.10 per step; Spec-Bench EAGLE (A100, Vicuna-7B, depth 5): 0.076",
        ),
        FamilyPrior("mtp", 0.085, 0.0, "one target-width decoder layer and the LM head, as an EAGLE head"),
        FamilyPrior("hydra", 0.05, 0.0, "Spec-Bench Hydra (A100, Vicuna-7B): rounds of 1.55 steps, depth 4"),
        FamilyPrior("medusa", 0.0, 0.0, "heads run inside the verify forward; Spec-Bench Medusa: 1.30 steps"),
        FamilyPrior(
            "draft_model", 0.08, 0.0, "Spec-Bench SpS (Vicuna-68M drafting for 7B, A100): 1.53 steps"
        ),
        FamilyPrior("ngram", 0.0, 0.0, "prompt lookup on the CPU; Spec-Bench PLD: 1.09 steps"),
        FamilyPrior("lookahead", 0.0, 0.1, "Jacobi window in the verify forward; Spec-Bench Lookahead"),
        FamilyPrior("retrieval", 0.0, 0.05, "datastore lookup; Spec-Bench REST: 1.23 steps"),
        # Block drafters: one forward of a few target-width layers drafts the whole block, so the cost is per
        # round. Back-solved with the priors' own round (verify growth, overhead, comm share, size factor):
        # SGLang #29244 (A800, Qwen3-8B, DFlash b16): 88 -> 162 tok/s at accept len 2.8, a round of 1.52 steps
        # less a 16-token verify (1.035) and the overhead (0.10): 0.39. SGLang #19952 (H100 TP4 over NVLink,
        # Qwen3.5-27B): 103.6 -> 207.2 tok/s at 3.233, a round of 1.62 steps: 0.53 at 8B per GPU. Mean 0.46.
        FamilyPrior(
            "dflash",
            0.46,
            0.0,
            "per round: SGLang #29244 (A800, Qwen3-8B, b16) 0.39; SGLang #19952 (H100 TP4, Qwen3.5-27B) 0.53",
            block=True,
        ),
        FamilyPrior(
            "dspark",
            0.46,
            0.0,
            "per round: DFlash's backbone plus a rank-256 Markov head (0.2-1.3 % of latency): DFlash's prior",
            block=True,
        ),
        FamilyPrior(
            "domino",
            0.46,
            0.0,
            "per round: DFlash's backbone with a GRU logit correction: DFlash's prior",
            block=True,
        ),
        FamilyPrior(
            "peagle",
            0.13,
            0.0,
            "per round: P-EAGLE drafts every position in one pass of an EAGLE-3 layer, EAGLE-3's one step",
            block=True,
        ),
    )
}
DEFAULT_FAMILY = "eagle3"

_FAMILY_PATTERNS = (
    # block drafters first: "p-eagle" and "...-eagle3-dflash" names hold an EAGLE family's name too
    ("dspark", r"dspark"),
    ("domino", r"domino"),
    ("dflash", r"(?:\b|_)d[-_]?flash"),
    ("peagle", r"\bp[-_]?eagle"),
    ("eagle3", r"eagle[-_ ]?3|eagle3"),
    ("mtp", r"nextn|mtp|deepseek"),
    ("eagle", r"eagle|hass|griffin"),
    ("hydra", r"hydra"),
    ("medusa", r"medusa"),
    ("ngram", r"ngram|n-gram|pld|prompt[-_ ]?lookup|suffix"),
    ("lookahead", r"lookahead|jacobi"),
    ("retrieval", r"rest\b|retrieval"),
    ("draft_model", r"draft[-_ ]?model|standalone|sps|assisted"),
)


@cache  # called once per benchmark group in a refresh, with a handful of distinct names
def drafter_family(*names: str | None) -> str:
    """The family of a drafter from its speculative algorithm (EAGLE3, NEXTN, ngram, ...) and/or name;
    unknown ones are treated as EAGLE-3, the most common drafter specdash sees."""
    for name in names:
        text = (name or "").lower()
        for family, pattern in _FAMILY_PATTERNS:
            if re.search(pattern, text):
                return family
    return DEFAULT_FAMILY


def is_block_family(family: str) -> bool:
    """Whether drafters of `family` propose all their draft tokens in one step."""
    prior = FAMILIES.get(family)
    return prior is not None and prior.block


@dataclass(frozen=True)
class TargetArchitecture:
    """What of a target's config.json the cost model uses. Parameters in billions."""

    total_params_b: float | None = None
    active_params_b: float | None = None
    num_experts: int | None = None  # routed experts per MoE layer
    experts_per_token: int | None = None
    num_layers: int | None = None
    kv_bytes_per_layer_token: float | None = None  # K and V (or MLA's latent) of one token in one layer
    # layers attending over the last `window_tokens` only (then the two above count the full-attention
    # layers): their K and V bytes of one token, summed over them
    window_tokens: int | None = None
    windowed_kv_bytes_per_token: float | None = None

    @property
    def is_moe(self) -> bool:
        return bool(self.num_experts and self.experts_per_token and self.num_experts > self.experts_per_token)

    @classmethod
    def from_config(
        cls, config: dict[str, Any], total_params_b: float | None = None, active_params_b: float | None = None
    ) -> "TargetArchitecture":
        """From a Hugging Face config.json: `num_experts` (Qwen), `num_local_experts` (Mixtral, Llama 4),
        `n_routed_experts` (DeepSeek, Kimi) and `num_experts_per_tok`; the KV geometry from
        `num_hidden_layers`, `num_key_value_heads` and `head_dim` (else hidden_size / num_attention_heads),
        or MLA's `kv_lora_rank` + `qk_rope_head_dim`, in bf16; nested `text_config` too."""
        config = config.get("text_config", config)
        experts = next(
            (config[k] for k in ("num_experts", "num_local_experts", "n_routed_experts") if config.get(k)),
            None,
        )
        return cls(
            total_params_b,
            active_params_b,
            experts,
            config.get("num_experts_per_tok"),
            config.get("num_hidden_layers"),
            kv_bytes_per_layer_token(config),
        )


# From each model's config.json on Hugging Face (expert counts) and its model card (parameter counts).
KNOWN_TARGETS = {
    "qwen3-30b-a3b": TargetArchitecture(30.5, 3.3, 128, 8),
    "qwen3-coder-30b-a3b": TargetArchitecture(30.5, 3.3, 128, 8),
    "qwen3-235b-a22b": TargetArchitecture(235, 22, 128, 8),
    "qwen3-coder-480b-a35b": TargetArchitecture(480, 35, 160, 8),
    "qwen3-next-80b-a3b": TargetArchitecture(80, 3, 512, 10),
    "kimi-k2": TargetArchitecture(1000, 32, 384, 8),
    "ling-flash-2.0": TargetArchitecture(100, 6.1, 256, 8),
    "llama-4-scout-17b-16e": TargetArchitecture(109, 17, 16, 1),
    "llama-4-maverick-17b-128e": TargetArchitecture(400, 17, 128, 1),
    "deepseek-v3": TargetArchitecture(671, 37, 256, 8),
    "deepseek-r1": TargetArchitecture(671, 37, 256, 8),
    "gpt-oss-120b": TargetArchitecture(117, 5.1, 128, 4),
    "gpt-oss-20b": TargetArchitecture(21, 3.6, 32, 4),
    "glm-4.7-flash": TargetArchitecture(30, 3, 64, 4),
    "mixtral-8x7b": TargetArchitecture(46.7, 12.9, 8, 2),
    "mixtral-8x22b": TargetArchitecture(141, 39, 8, 2),
}
_DENSE_SIZE = re.compile(r"(\d+(?:\.\d+)?)b\b")
_MOE_SIZE = re.compile(r"(\d+(?:\.\d+)?)b-a(\d+(?:\.\d+)?)b\b")
# routed experts and experts per token of a MoE known only by its name: Qwen3's 128 and 8, the most common
GENERIC_MOE_EXPERTS = (128, 8)


def architecture_for(model: str | None) -> TargetArchitecture | None:
    """The architecture of a target named like a Hugging Face model id: a known MoE, else a dense model
    whose size the name gives (`Llama-3.1-8B-Instruct` -> 8B dense), else None."""
    if not model:
        return None
    name = model.lower().rsplit("/", 1)[-1]
    arch = _architecture_by_name(name)
    known = known_kv_fields(name) if "distill" not in name else None
    return arch if arch is None or known is None else replace(arch, **known)


def _architecture_by_name(name: str) -> TargetArchitecture | None:
    # a distilled model is its student (DeepSeek-R1-Distill-Llama-8B is a dense 8B Llama, not R1)
    if "distill" not in name:
        for key, arch in KNOWN_TARGETS.items():
            if name.startswith(key):
                return arch
    moe = _MOE_SIZE.search(name)
    if moe:  # "<total>B-A<active>B": a MoE whose expert counts the name does not give
        return TargetArchitecture(float(moe.group(1)), float(moe.group(2)), *GENERIC_MOE_EXPERTS)
    match = _DENSE_SIZE.search(name)
    if match and not re.search(r"\d+e\b|moe", name):
        size = float(match.group(1))
        return TargetArchitecture(size, size)
    return None


@cache  # a refresh asks for a deployment's knee once per prediction; a store names a handful of GPUs
def knee_tokens(gpu: str | None) -> int:
    text = (gpu or "").lower()
    for name, knee in sorted(GPU_KNEE_TOKENS.items(), key=lambda item: -len(item[0])):
        if name in text:
            return knee
    return DEFAULT_KNEE_TOKENS


def distinct_experts(num_experts: int, experts_per_token: int, tokens: float) -> float:
    """Expected number of distinct experts that `tokens` tokens route to, each picking k of E uniformly:
    E (1 - (1 - k/E)^n)."""
    missed: float = (1.0 - experts_per_token / num_experts) ** tokens
    return num_experts * (1.0 - missed)


def compute_time(arch: TargetArchitecture | None, knee: int, tokens: float) -> float:
    """Compute time of one forward over `tokens` tokens, in units of a one-token forward.

    Dense part: a soft roofline sqrt(1 + (n / knee)^2), flat while weights dominate and linear once compute
    does. MoE part (MOE_EXPERT_SHARE of the time): proportional to the distinct experts read."""
    dense = math.hypot(1.0, tokens / knee) / math.hypot(1.0, 1.0 / knee)
    if arch is None or not arch.is_moe:
        return dense
    assert arch.num_experts and arch.experts_per_token  # is_moe says both are set
    experts = distinct_experts(arch.num_experts, arch.experts_per_token, tokens) / arch.experts_per_token
    return (1.0 - MOE_EXPERT_SHARE) * dense + MOE_EXPERT_SHARE * experts


def verify_growth(arch: TargetArchitecture | None, knee: int, concurrency: int, draft_tokens: int) -> float:
    """Growth per extra verified token b_c of a verify's compute at this load: T_compute(B N) / T_compute(B)
    = 1 + b_c (N - 1), plus the per-token floor. Collectives grow by COMM_GROWTH."""
    extra = max(draft_tokens - 1, 0)
    if extra == 0:
        return 0.0
    batch = max(concurrency, 1)
    ratio = compute_time(arch, knee, batch * draft_tokens) / compute_time(arch, knee, batch)
    return (ratio - 1.0) / extra + VERIFY_TOKEN_FLOOR


def load_factor(arch: TargetArchitecture | None, knee: int, concurrency: int, comm_fraction: float) -> float:
    """T_base(B) / T_base(1) the model expects: compute grows with the batch, collectives barely."""
    return (1.0 - comm_fraction) * compute_time(arch, knee, max(concurrency, 1)) + comm_fraction


def size_factor(arch: TargetArchitecture | None, tp_size: int | None) -> float:
    """Draft cost relative to the reference (8B parameters per GPU): (8 / active-per-GPU)^0.4, bounded."""
    if arch is None or not arch.active_params_b:
        return 1.0
    per_gpu = arch.active_params_b / max(tp_size or 1, 1)
    low, high = SIZE_FACTOR_BOUNDS
    factor: float = (REFERENCE_PARAMS_PER_GPU_B / per_gpu) ** SIZE_EXPONENT
    return min(high, max(low, factor))


def prior_comm_fraction(tp_size: int | None, interconnect: str | None) -> float:
    if not tp_size or tp_size <= 1:
        return 0.0
    return COMM_FRACTION_BY_INTERCONNECT.get((interconnect or "").lower(), COMM_FRACTION_UNKNOWN_LINK)


@dataclass(frozen=True)
class DeploymentFacts:
    """What the priors need to know about a deployment; anything may be unknown."""

    gpu: str | None = None
    tp_size: int | None = None
    interconnect: str | None = None
    architecture: TargetArchitecture | None = None
    engine: str | None = None  # sglang, vllm, pytorch, ...: see harness_factors

    @property
    def knee(self) -> int:
        return knee_tokens(self.gpu)


@dataclass(frozen=True)
class PriorCosts:
    """Prior costs of one round in ms at one load, and where each came from."""

    comm_fraction: float
    draft_step_ms: float
    round_overhead_ms: float
    verify_growth_compute: float
    verify_growth_comm: float
    family: str


def prior_costs(
    facts: DeploymentFacts,
    base_step_ms: float,
    family: str,
    concurrency: int = 1,
    draft_tokens: int = 4,
    comm_fraction: float | None = None,
) -> PriorCosts:
    """Prior costs for a drafter of `family` on a deployment whose baseline step at this load is
    `base_step_ms`. Draft and overhead scale with the compute part of the batch-1 step the load model
    implies (they neither grow with the batch nor pay the all-reduce), verify growth follows the
    architecture at batch x verified tokens."""
    # the harness factors are read at each call: a fit of them (bench/costmodel_accuracy.py) sets them
    shape = _prior_shape(
        facts, family, concurrency, draft_tokens, comm_fraction, harness_factors(facts.engine)
    )
    # The drafter and the round's bookkeeping do not pay the target's all-reduce: they scale with the
    # compute part of a batch-1 step. (So on PCIe, where all-reduce is half a step, drafting is relatively
    # cheap, and deep speculation pays.)
    compute_at_batch_1 = shape.compute_share * base_step_ms / shape.load_factor
    return PriorCosts(
        comm_fraction=shape.comm_fraction,
        draft_step_ms=shape.draft_factor * compute_at_batch_1,
        round_overhead_ms=shape.overhead_factor * compute_at_batch_1,
        verify_growth_compute=shape.verify_growth,
        verify_growth_comm=COMM_GROWTH,
        family=shape.family,
    )


class _PriorShape(NamedTuple):
    """What prior_costs takes from a deployment, family, load and setting, whatever the baseline step:
    each cost is one of these times the step (a refresh asks for the same few shapes at every baseline)."""

    comm_fraction: float
    compute_share: float  # 1 - comm_fraction
    load_factor: float
    draft_factor: float  # the family's draft step, by target size and harness
    overhead_factor: float
    verify_growth: float
    family: str


@lru_cache(maxsize=4096)
def _prior_shape(
    facts: DeploymentFacts,
    family: str,
    concurrency: int,
    draft_tokens: int,
    comm_fraction: float | None,
    harness: tuple[float, float],
) -> _PriorShape:
    f = prior_comm_fraction(facts.tp_size, facts.interconnect) if comm_fraction is None else comm_fraction
    prior = FAMILIES.get(family, FAMILIES[DEFAULT_FAMILY])
    draft_factor, overhead_factor = harness
    size = size_factor(facts.architecture, facts.tp_size)
    return _PriorShape(
        f,
        1.0 - f,
        load_factor(facts.architecture, facts.knee, concurrency, f),
        prior.draft_step * size * draft_factor,
        (ROUND_OVERHEAD + prior.extra_overhead) * overhead_factor,
        verify_growth(facts.architecture, facts.knee, concurrency, draft_tokens),
        prior.family,
    )


# A calibrated verify growth is stated at this load and setting; others scale by the architecture's shape.
GROWTH_REFERENCE = (1, 4)  # (concurrency, verified tokens)


def growth_shape(facts: DeploymentFacts, concurrency: int, draft_tokens: int) -> float:
    """The architecture's verify growth per token at this load and setting relative to GROWTH_REFERENCE."""
    reference = verify_growth(facts.architecture, facts.knee, *GROWTH_REFERENCE)
    here = verify_growth(facts.architecture, facts.knee, concurrency, draft_tokens)
    return here / reference if reference > 0 else 1.0


COST_FIELDS = (
    "comm_fraction",
    "draft_step_ms",
    "round_overhead_ms",
    "verify_growth_compute",
    "verify_growth_comm",
)


def resolve_costs(
    stated: Mapping[str, float | None],
    facts: DeploymentFacts,
    baseline_tps: float,
    family: str = DEFAULT_FAMILY,
    concurrency: int = 1,
    draft_tokens: int = 4,
) -> CostParams:
    """A deployment's cost parameters at one load and setting: what its profile states, and for every cost
    it leaves unstated (None) the prior."""
    costs = {name: stated.get(name) for name in COST_FIELDS}
    resolved: dict[str, float] = {name: value for name, value in costs.items() if value is not None}
    if len(resolved) < len(costs):
        prior = prior_costs(
            facts,
            1000.0 / baseline_tps,
            family,
            concurrency,
            draft_tokens,
            comm_fraction=costs["comm_fraction"],
        )
        resolved = {name: getattr(prior, name) if value is None else value for name, value in costs.items()}
    return CostParams(
        baseline_tps=baseline_tps, draft_branch_ms=stated.get("draft_branch_ms") or 0.0, **resolved
    )
