"""JSON Schema of specdash's own format, generated from the very models that validate it."""

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from specdash.ingest.formats.native import FORMAT_VERSION
from specdash.ingest.records import (
    RECORD_TYPES,
    BenchmarkRecord,
    CheckpointRecord,
    DeploymentRecord,
    MetricsRecord,
    PredictionRecord,
    RunRecord,
)

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


class NativeDocument(BaseModel):
    """A specdash document: a format version and one array per kind of record, all optional."""

    model_config = ConfigDict(extra="forbid", title="specdash document")

    specdash: Literal[1] = Field(description=f"format version, {FORMAT_VERSION}")
    deployments: list[DeploymentRecord] = []
    runs: list[RunRecord] = []
    checkpoints: list[CheckpointRecord] = []
    metrics: list[MetricsRecord] = []
    benchmarks: list[BenchmarkRecord] = []
    predictions: list[PredictionRecord] = []


AnyKind = Annotated[
    DeploymentRecord | RunRecord | CheckpointRecord | MetricsRecord | BenchmarkRecord | PredictionRecord,
    Field(discriminator="kind"),
]

KINDS = ("document", "line", *RECORD_TYPES)


def native_json_schema(kind: str = "document") -> dict[str, Any]:
    """The schema of a document, of one JSONL line ("line": any record with its "kind"), or of one kind."""
    if kind == "document":
        schema = NativeDocument.model_json_schema()
    elif kind == "line":
        schema = TypeAdapter(AnyKind).json_schema()
        schema["title"] = "specdash JSONL record"
    else:
        schema = RECORD_TYPES[kind].model_json_schema()
    return {"$schema": SCHEMA_DIALECT, **schema}
