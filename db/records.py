"""The rules a record must meet before the store takes it: plausibility bounds, the field types built on
them, the base every record validates with, and a deployment's profile (a native file's deployment
record and the Settings page's form alike). The other records of the input formats build on these in
ingest/records.py."""

import math
import re
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from specdash.costmodel.context import MAX_CONTEXT_TOKENS

# Plausibility bounds (the README's "Plausibility bounds" lists them; a refusal names the bound).
# Integers: what every backend's INTEGER column holds (PostgreSQL's is 32-bit).
MAX_INT = 2**31 - 1
# Text: the column widths of the store, the same on SQLite and PostgreSQL.
NAME_CHARS, PATH_CHARS, SHORT_CHARS, TAG_CHARS, NOTE_CHARS = 200, 1000, 40, 20, 20_000
# Throughputs in tokens/s: per request and aggregate over a server.
MIN_TPS, MAX_REQUEST_TPS, MAX_AGGREGATE_TPS = 0.01, 100_000.0, 10_000_000.0
# Per-token and per-round times in ms (TPOT, ITL, a round, a draft step), and a request's TTFT.
MIN_STEP_MS, MAX_STEP_MS, MAX_TTFT_MS = 0.001, 60_000.0, 3_600_000.0
# Speculation settings: draft steps K, top-k, draft tokens N.
MAX_STEPS, MAX_TOPK, MAX_DRAFT_TOKENS = 64, 64, 1024
# Rules relating fields (TPOT against decode tok/s, medians under p99s, ...) live in ingest/rules/.
# C0 and C1 control characters and DEL: an escape sequence in a name would drive the terminal showing it.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# Unicode's bidirectional controls (embeddings, overrides, isolates, marks): invisible, and they reorder the
# text around them, so a name holding one reads as another on a page or a terminal.
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")

Name = Annotated[str, Field(min_length=1, max_length=NAME_CHARS)]
PathText = Annotated[str, Field(max_length=PATH_CHARS)]
Short = Annotated[str, Field(max_length=SHORT_CHARS)]
Tag = Annotated[str, Field(max_length=TAG_CHARS)]
Note = Annotated[str, Field(max_length=NOTE_CHARS)]
Text200 = Annotated[str, Field(max_length=NAME_CHARS)]
Count = Annotated[int, Field(ge=1, le=MAX_INT)]
Whole = Annotated[int, Field(ge=0, le=MAX_INT)]
PositiveFloat = Annotated[float, Field(gt=0)]
NonNegFloat = Annotated[float, Field(ge=0)]
Share = Annotated[float, Field(ge=0, le=1)]
RequestTps = Annotated[float, Field(ge=MIN_TPS, le=MAX_REQUEST_TPS)]
AggregateTps = Annotated[float, Field(ge=MIN_TPS, le=MAX_AGGREGATE_TPS)]
StepMs = Annotated[float, Field(ge=MIN_STEP_MS, le=MAX_STEP_MS)]
CostMs = Annotated[float, Field(ge=0, le=MAX_STEP_MS)]
LatencyMs = Annotated[float, Field(ge=0, le=MAX_TTFT_MS)]
ContextTokens = Annotated[float, Field(ge=0, le=MAX_CONTEXT_TOKENS)]
# a round emits at most its draft steps plus the bonus token, whatever the settings a file leaves unsaid
AcceptLength = Annotated[float, Field(ge=1, le=MAX_STEPS + 1)]


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    # Fields where infinity means something (a request rate of inf: every request sent at once).
    INFINITE_OK: ClassVar[frozenset[str]] = frozenset()
    # Free text that may hold line breaks and tabs; every other text is one line without control characters.
    MULTILINE: ClassVar[frozenset[str]] = frozenset({"notes"})

    @model_validator(mode="before")
    @classmethod
    def _no_bool_numbers(cls, data: Any) -> Any:
        # JSON's true/false are not 1/0: a number field given one is a broken record.
        # the common record holds no bool at all: one C-level pass over its values decides
        if isinstance(data, dict) and bool in set(map(type, data.values())):
            for name, value in data.items():
                model_field = cls.model_fields.get(name)
                if isinstance(value, bool) and model_field is not None and model_field.annotation is not bool:
                    raise ValueError(f"{name}: must be a number or text, not {str(value).lower()}")
        return data

    @field_validator("*", mode="after")
    @classmethod
    def _finite(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, float) and not math.isfinite(value):
            if not (math.isinf(value) and value > 0 and info.field_name in cls.INFINITE_OK):
                raise ValueError("must be a finite number")
        elif isinstance(value, str):
            if "\x00" in value:
                raise ValueError("must not contain NUL characters")
            if info.field_name not in cls.MULTILINE and (bad := _CONTROL.search(value)):
                raise ValueError(
                    f"must not contain control characters ({bad[0]!r}): names are one line of text"
                )
            if bad := _BIDI.search(value):
                raise ValueError(
                    f"must not contain bidirectional control characters (U+{ord(bad[0]):04X}): they reorder "
                    "the text shown around them"
                )
        return value


class DeploymentRecord(Record):
    kind: Literal["deployment"] = "deployment"
    name: Name
    gpu: Annotated[str, Field(max_length=100)] | None = None
    num_gpus: Count | None = None
    tp_size: Count | None = None
    interconnect: Tag | None = None
    engine: Short | None = None
    target_model: Text200 | None = None
    target_hidden_size: Count | None = None
    baseline_tps: RequestTps | None = None
    # cost profile; a cost not given is not stated, and the published prior applies (costmodel/priors.py)
    comm_fraction: Annotated[float, Field(ge=0, lt=1)] | None = None
    draft_step_ms: CostMs | None = None
    round_overhead_ms: CostMs | None = None
    verify_growth_compute: Annotated[float, Field(ge=0, le=100)] | None = None
    verify_growth_comm: Annotated[float, Field(ge=0, le=100)] | None = None
    # the target's architecture, from its config.json (num_experts / num_local_experts / n_routed_experts,
    # num_experts_per_tok) and model card; not given: looked up by target_model
    target_num_experts: Count | None = None
    target_experts_per_token: Count | None = None
    target_active_params_b: Annotated[float, Field(gt=0, le=100_000)] | None = None
    target_total_params_b: Annotated[float, Field(gt=0, le=100_000)] | None = None
    gap_threshold: Annotated[float, Field(gt=0, le=1)] | None = None
    notes: Note | None = None
    is_demo: bool = False

    @model_validator(mode="after")
    def _tp_within_gpus(self):
        if self.tp_size is not None and self.num_gpus is not None and self.tp_size > self.num_gpus:
            raise ValueError(f"tp_size: {self.tp_size} is more than num_gpus {self.num_gpus}")
        return self
