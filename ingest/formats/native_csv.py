"""specdash's own CSV: one record a row, columns named like the JSON fields, the record kind from a
`kind` column or from the file name (runs.csv, benchmarks.csv, ...)."""

import json
from collections.abc import Iterator
from pathlib import PurePath
from typing import TextIO

from pydantic import TypeAdapter, ValidationError

from specdash.ingest.csvtext import csv_rows, header_of
from specdash.ingest.formats.base import Located
from specdash.ingest.problems import Problem, from_validation_error
from specdash.ingest.records import RECORD_TYPES

NAME = "specdash-csv"
HELP = "specdash's own CSV: a row per record, a `kind` column or a file named runs.csv, benchmarks.csv, ..."

ADAPTERS = {kind: TypeAdapter(model) for kind, model in RECORD_TYPES.items()}
KIND_BY_STEM = {**{kind: kind for kind in RECORD_TYPES}, **{f"{kind}s": kind for kind in RECORD_TYPES}}
KIND_BY_STEM["metrics"] = "metrics"
# Cells holding JSON: lists and objects (acceptance, position_survival, config, raw).
JSON_FIELDS = {"acceptance", "position_survival", "config", "raw", "values"}


def _kind_from_name(filename: str) -> str | None:
    stem = PurePath(filename).name.split(".")[0].lower()
    return KIND_BY_STEM.get(stem)


def detect(head: str, filename: str) -> bool:
    if not filename.lower().endswith(".csv"):
        return False
    columns = set(header_of(head))
    if "kind" in columns:
        return True
    kind = _kind_from_name(filename)
    return kind is not None and columns <= set(RECORD_TYPES[kind].model_fields) | {"key", "value", "kind"}


def _record(kind: str, cells: dict[str, str]) -> dict:
    data: dict = {}
    for name, cell in cells.items():
        if name == "kind":
            continue
        if name in JSON_FIELDS and cell[:1] in "[{":
            try:
                data[name] = json.loads(cell)
                continue
            except ValueError:
                pass
        data[name] = cell
    if kind == "metrics" and "values" not in data:
        if "key" in data and "value" in data:  # long form: run,step,key,value
            data["values"] = {data.pop("key"): data.pop("value")}
        else:  # wide form: run,step,<one column per metric key>
            data["values"] = {k: data.pop(k) for k in list(data) if k not in ("run", "step")}
    return data


def parse(stream: TextIO, path: str, link=None) -> Iterator:
    file_kind = _kind_from_name(path)
    for item in csv_rows(stream, path):
        if isinstance(item, Problem):
            yield item
            continue
        line, cells = item
        kind = cells.get("kind", file_kind)
        if kind not in ADAPTERS:
            yield Problem(path, line, "kind", f"unknown record kind {kind!r}")
            continue
        try:
            yield Located(line, ADAPTERS[kind].validate_python(_record(kind, cells)))
        except ValidationError as exc:
            yield from from_validation_error(path, line, exc)
