"""The tables `guidellm benchmark` prints at the end of a run, as users paste them into issue threads and
capture them with `| tee`: one benchmark per row (a sweep's synchronous, throughput and constant-rate
runs, or `--rate-type concurrent` levels).

Layouts, from GuideLLM's own printing code (vllm-project/guidellm):
- 0.2-0.3 (`benchmark/output.py`, `print_benchmarks_stats`): a `Benchmarks Stats:` title, a `=====`
  line, a section line (`Metadata | Request Stats || Out Tok/sec| ...`, a section spanning n columns
  followed by n - 1 empty cells), a column line (`Benchmark| Per Second| Concurrency| mean| ...`), a
  `-----|-----` line, a row per benchmark (`constant@2.06|  1.65| 8.67| ...`) and a closing `=====`
  line. The `Benchmarks Info:` table above it gives completed requests and tokens per request. Request
  latency is in seconds in both (0.2 heads it `Req Latency (ms)`, guidellm#245; 0.3 `(sec)`).
- 0.4+ (`benchmark/outputs/console.py`, `utils/console.py`): `|`-edged tables titled `Request Latency
  Statistics (Completed Requests)` (TTFT, ITL, TPOT: median and p95) and `Server Throughput Statistics`
  (concurrency, requests and tokens per second: mean and median), three header lines whose merged cells
  print empty, each row naming only the strategy type (`constant`): rows are joined by position.
A header cell printed empty (zero width between two `|`) continues the span on its left; that is how both
layouts print a group over several columns, and how columns are named here ("TTFT (ms) / median",
"TTFT / ms / Mdn").

Stored per row as the JSON reader (guidellm.py) stores a report's benchmark: the measured mean in flight
(rounded), per request 1000 / median TPOT, aggregate output tok/s mean, the TTFT/ITL/TPOT medians (and
p99s, 0.2-0.3), the configured rate of a constant or poisson run, every printed column in the raw record.
The tables name no speculation and GuideLLM's ITL is a per-token figure by construction ((last - first
token time) / (output tokens - 1)), so streamed gaps cannot tell it either: the setting is the one the
caller or an `--output-extras setting=...` states, else speculating with an unknown setting, as for a
report. The model is the one GuideLLM printed above the tables (`Backend ... for model X.`,
`backend_model='X'`, `backend validated with model X`), else `--deployment` names the deployment."""

import re
from collections.abc import Iterator
from typing import Any, TextIO

from specdash.ingest.formats.base import Format, Located
from specdash.ingest.formats.common import (
    benchmark,
    choose_deployment,
    client_load,
    deployment_name,
    deployment_record,
    missing_deployment,
    no_per_request,
    prose_or_source,
    safe_raw,
)
from specdash.ingest.formats.guidellm import stated_setting
from specdash.ingest.lines import ANSI_ESCAPE, TooLong, bounded_lines
from specdash.ingest.problems import SKIPPED, Problem
from specdash.ingest.records import SpeculationSetting

NAME = "guidellm-console"
HELP = "GuideLLM printed tables (Benchmarks Stats, 0.4+ Request Latency / Server Throughput), one benchmark a row"

TITLES = ("Benchmarks Info", "Benchmarks Stats", "Request Latency Statistics", "Server Throughput Statistics")
TITLE = re.compile(r"^(?:[^\sA-Za-z]{1,3}\s*)?(?P<title>" + "|".join(TITLES) + r")\b.{0,40}$")
BORDER = re.compile(r"^\|?=+(?:\|=+)*\|?$")
DIVIDER = re.compile(r"^\|?-+(?:\|-+)*\|?$")
MODEL = (
    re.compile(r"connected to \S+ for model (?P<model>\S{1,200}?)\.?$"),  # 0.2-0.3
    re.compile(r"backend_model='(?P<model>[^']{1,200})'"),  # 0.2-0.3 Benchmarks Metadata
    re.compile(r"backend validated with model (?P<model>\S{1,200})"),  # 0.4+
)
# `--output-extras` as 0.2-0.3 print them in Benchmarks Metadata (`Extras:tag=x, setting=EAGLE3/3/1/4`).
EXTRA = re.compile(r"\b(setting|deployment|engine|run|checkpoint|drafter|dataset)=([^,\s'{}]{1,200})")
STRATEGY = re.compile(r"^(?P<kind>[a-z_]+)(?:@(?P<value>\d+(?:\.\d+)?))?$")
# A run's tables end with this one: 0.2-0.3 print Stats last, 0.4+ Server Throughput.
LAST = ("Benchmarks Stats", "Server Throughput Statistics")

# Each printed column (its header cells joined) and the field it fills; every column is kept in raw.
COLUMNS = {
    "Metadata / Benchmark": "strategy",
    "Benchmark / Strategy": "strategy",
    "Request Stats / Concurrency": "concurrency",
    "Requests / Concurrency / Mean": "concurrency",
    "Out Tok/sec / mean": "output_throughput",
    "Output Tokens / Per Sec / Mean": "output_throughput",
    "TTFT (ms) / median": "median_ttft_ms",
    "TTFT (ms) / p99": "p99_ttft_ms",
    "TTFT / ms / Mdn": "median_ttft_ms",
    "ITL (ms) / median": "median_itl_ms",
    "ITL (ms) / p99": "p99_itl_ms",
    "ITL / ms / Mdn": "median_itl_ms",
    "TPOT (ms) / median": "median_tpot_ms",
    "TPOT (ms) / p99": "p99_tpot_ms",
    "TPOT / ms / Mdn": "median_tpot_ms",
    "Requests Made / Comp": "completed",
    "Prompt Tok/Req / Comp": "input_tokens",
    "Output Tok/Req / Comp": "output_tokens",
}


def detect(head: str, filename: str) -> bool:
    """Positive evidence: a title GuideLLM prints followed by its two-level header."""
    if prose_or_source(filename):
        return False
    lines = [ANSI_ESCAPE.sub("", line).strip() for line in head.splitlines()[:20000]]
    for number, line in enumerate(lines):
        title = TITLE.match(line)
        if title is None or title["title"] == "Benchmarks Info":
            continue
        after = "\n".join(lines[number + 1 : number + 6])
        if ("Request Stats" in after and "Per Second|" in after and "Concurrency|" in after) or (
            "| Benchmark" in after and "| Strategy" in after
        ):
            return True
    return False


class Table:
    """One printed table as read so far: its header lines' cells and its rows' cells, with their lines."""

    def __init__(self, title: str, line: int):
        self.title, self.line = title, line
        self.headers: list[list[str]] = []
        self.rows: list[tuple[int, list[str]]] = []
        self.state = "border"  # then "header", then "rows", then "closed"

    def read(self, number: int, text: str) -> None:
        if self.state == "border":
            self.state = "header" if BORDER.match(text) else "closed"
        elif self.state == "header":
            if DIVIDER.match(text):
                self.state = "rows"
            elif "|" in text:
                self.headers.append(cells(text))
            else:
                self.state = "closed"
        elif self.state == "rows":
            if BORDER.match(text) or "|" not in text:
                self.state = "closed"  # 0.4+ print a border between sub-tables: the first one is read
            else:
                self.rows.append((number, cells(text)))

    def columns(self) -> list[str] | None:
        """Each column's name, its header cells joined; None when the header lines disagree in width."""
        if not self.headers or len({len(h) for h in self.headers}) != 1:
            return None
        filled = []
        for header in self.headers:
            row, span = [], ""
            for cell in header:
                span = span if cell == "" else cell.strip()  # an empty cell continues the span on its left
                row.append(span)
            filled.append(row)
        return [" / ".join(part for part in parts if part) for parts in zip(*filled, strict=True)]


def cells(text: str) -> list[str]:
    """A line's cells: 0.4+ print an edge `|` at both ends, 0.2-0.3 none."""
    if text.startswith("|") and text.endswith("|") and len(text) > 1:
        text = text[1:-1]
    return text.split("|")


def parse(stream: TextIO, path: str, link: Any = None) -> Iterator[Any]:
    context: dict[str, str] = {}
    run: dict[str, Table] = {}
    table: Table | None = None
    described: set[str] = set()
    for number, raw in bounded_lines(stream):
        if isinstance(raw, TooLong):
            continue  # a progress bar run together: no table line is that long
        text = ANSI_ESCAPE.sub("", raw).strip()
        if table is not None and table.state != "closed":
            table.read(number, text)
            if table.state == "closed" and table.title in LAST:
                yield from records_from(run, path, link, context, described)
                run = {}
            continue
        title = TITLE.match(text)
        if title is not None:
            if title["title"] in run:  # a title seen again before the run's last table: a new run
                yield from records_from(run, path, link, context, described)
                run = {}
            table = run[title["title"]] = Table(title["title"], number)
        else:
            _remember(text, context)
    if run:
        yield from records_from(run, path, link, context, described)


def _remember(text: str, context: dict[str, str]) -> None:
    """What GuideLLM prints above its tables: the backend's model and the run's extras."""
    for pattern in MODEL:
        if (model := pattern.search(text)) is not None:
            context["model"] = model["model"]
    if text.startswith("Extras:"):
        context.update((key, value) for key, value in EXTRA.findall(text))


def _number(value: str) -> float | str:
    try:
        return float(value)
    except ValueError:
        return value


def printed_rows(run: dict[str, Table], path: str) -> Iterator[tuple[int, dict[str, Any]] | Problem]:
    """Each benchmark's printed columns, its tables' rows joined by position, on the line of its row in
    the run's main table (Stats, else Server Throughput, else Request Latency); a row cut short (a paste
    that ends mid-line) is refused on its line, the others read."""
    read: list[tuple[list[str], Table]] = []
    for table in sorted(run.values(), key=lambda t: t.title not in LAST):
        names = table.columns()
        if names is None:
            yield Problem(path, table.line, None, f"'{table.title}': header lines of unequal widths")
            continue
        read.append((names, table))
    if not read:
        return
    main_names, main = read[0]
    for index, (number, row) in enumerate(main.rows):
        if len(row) != len(main_names):
            yield Problem(path, number, None, f"a row of {len(row)} of the table's {len(main_names)} columns")
            continue
        printed: dict[str, Any] = {}
        for names, table in read:
            if index < len(table.rows) and len(table.rows[index][1]) == len(names):
                printed.update(zip(names, (_number(c.strip()) for c in table.rows[index][1]), strict=True))
        yield number, printed


def fields_of(printed: dict[str, Any]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for column, value in printed.items():
        if (field := COLUMNS.get(column)) is not None and (field == "strategy" or isinstance(value, float)):
            fields[field] = value
    return fields


def strategy_of(printed: str) -> tuple[str | None, float | None]:
    """A row's label as the JSON reader writes it (`constant rate=2.06`), and a constant or poisson run's
    configured rate; 0.4+ print the type alone."""
    match = STRATEGY.match(printed.strip())
    if match is None:
        return printed[:200] or None, None
    kind, value = match["kind"], match["value"]
    if value is None:
        return kind, None
    key = "streams" if kind == "concurrent" else "rate"
    return f"{kind} {key}={float(value):g}", float(value) if key == "rate" and float(value) > 0 else None


def records_from(
    run: dict[str, Table], path: str, link: Any, context: dict[str, str], described: set[str]
) -> Iterator[Any]:
    try:
        setting = stated_setting(context, link)
    except ValueError as exc:
        yield Problem(path, min(t.line for t in run.values()), "setting", str(exc))
        return
    model = context.get("model")
    deployment = choose_deployment(
        link, context.get("deployment"), deployment_name(context.get("engine") or "guidellm", model)
    )
    for item in printed_rows(run, path):
        if isinstance(item, Problem):
            yield item
            continue
        number, printed = item
        if deployment is None:
            yield missing_deployment(path, number)
            return
        if model and not (getattr(link, "deployment", None) or context.get("deployment")):
            if deployment not in described:  # the deployment serves the printed model (as a report's)
                described.add(deployment)
                yield Located(number, deployment_record(deployment, target_model=model))
        yield from row_record(number, printed, path, link, context, deployment, setting)


def row_record(
    number: int,
    printed: dict[str, Any],
    path: str,
    link: Any,
    context: dict[str, str],
    deployment: str,
    setting: SpeculationSetting,
) -> Iterator[Any]:
    fields = fields_of(printed)
    concurrency = fields.get("concurrency")
    if not (fields.get("median_tpot_ms") or 0) > 0 or not (concurrency or 0) > 0:
        yield Problem(path, number, None, "no successful requests to measure", SKIPPED)
        return
    load = client_load(
        median_tpot_ms=fields.get("median_tpot_ms"),
        median_itl_ms=fields.get("median_itl_ms"),
        accept_length=None,
        output_throughput=fields.get("output_throughput"),
        concurrency=concurrency,
        request_rate=None,
        prompts=None,
    )
    if load.decode_tps is None or load.concurrency is None:
        yield no_per_request(path, number)
        return
    label, rate = strategy_of(str(fields.get("strategy", "")))
    completed = fields.get("completed")
    speculative = setting.speculative_algorithm is not None
    yield from benchmark(
        path,
        number,
        deployment=deployment,
        run=(getattr(link, "run", None) or context.get("run")) if speculative else None,
        checkpoint=(getattr(link, "checkpoint", None) or context.get("checkpoint")) if speculative else None,
        drafter_path=context.get("drafter") if speculative else None,
        engine=context.get("engine"),
        **setting.setting_fields(),
        concurrency=load.concurrency,
        concurrency_source="measured mean",
        dataset=context.get("dataset"),
        num_prompts=int(completed) if completed is not None else None,
        # tokens per completed request as printed (a mean of 0 is usage the backend did not report)
        input_tokens=fields.get("input_tokens") or None,
        output_tokens=fields.get("output_tokens") or None,
        decode_tps=load.decode_tps,
        output_throughput=fields.get("output_throughput"),
        median_tpot_ms=fields.get("median_tpot_ms"),
        p99_tpot_ms=fields.get("p99_tpot_ms"),
        median_ttft_ms=fields.get("median_ttft_ms"),
        p99_ttft_ms=fields.get("p99_ttft_ms"),
        median_itl_ms=fields.get("median_itl_ms"),
        p99_itl_ms=fields.get("p99_itl_ms"),
        request_rate=rate,
        label=label,
        raw=safe_raw(
            {
                "printed": printed,
                "model": context.get("model"),
                "concurrency_mean": concurrency,
                "setting": "stated" if setting.num_steps or not speculative else "unknown",
                "specdash_derived": {"decode_tps": "1000 / median TPOT (ms)", "concurrency": "mean, rounded"},
            }
        ),
    )


FORMATS = [Format(NAME, HELP, detect, parse)]
