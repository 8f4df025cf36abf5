"""SGLang server logs: the scheduler's periodic `Decode batch` lines, one benchmark per server start and
load level (see logsummary), a `Prefill batch` line marking the rank's next interval as holding a prefill.

Both wordings are read: 0.5.2's `Decode batch. #running-req: 1, ..., accept len: 2.35, ...` and 0.5.9+'s
`Decode batch, #running-req: ...` (optionally `Decode batch [1234], ...`), after a `[timestamp DP0 TP0]`
prefix with or without milliseconds. Each `server_args=ServerArgs(...)` line starts a server and gives
its model, TP size, quantization and speculation settings."""

import re
from collections.abc import Iterator
from typing import TextIO

from specdash.ingest.formats.base import Format
from specdash.ingest.formats.common import (
    benchmark,
    choose_deployment,
    deployment_name,
    drafter_of,
    missing_deployment,
    prose_or_source,
    stated_in,
)
from specdash.ingest.formats.logsummary import (
    LOWER_BOUND_NOTE,
    Interval,
    Level,
    ServerIntervals,
    starts_benchmarks,
)
from specdash.ingest.lines import TooLong, bounded_lines, strip_ansi
from specdash.ingest.records import SPECULATION_UNKNOWN
from specdash.ingest.setting import algorithm_name

NAME = "sglang-log"
HELP = "SGLang server log: 'Decode batch' lines (0.5.2 and 0.5.9+ wording), a benchmark per start and load"

DECODE = re.compile(r"Decode batch(?: \[\d+\])?[.,] ")
RANKS = re.compile(r"\b((?:DP|ATTN_DP|PP)\d+)\b")
RUNNING = re.compile(r"#running-req: (\d+)")
GEN_TPS = re.compile(r"gen throughput \(token/s\): (\d+(?:\.\d+)?)")
ACCEPT = re.compile(r"accept len: (-?\d+(?:\.\d+)?)")
NEW_TOKENS = re.compile(r"#new-token: (\d+)")
PREFILL = re.compile(r"Prefill batch(?: \[\d+\])?[.,] ")
SERVER_ARGS = re.compile(r"server_args=ServerArgs\((.*)\)")
ARG_KEYS = (
    "model_path",
    "served_model_name",
    "tp_size",
    "quantization",
    "speculative_algorithm",
    "speculative_draft_model_path",
    "speculative_num_steps",
    "speculative_eagle_topk",
    "speculative_num_draft_tokens",
)
INT_ARGS = {"tp_size", "speculative_num_steps", "speculative_eagle_topk", "speculative_num_draft_tokens"}


def detect(head: str, filename: str) -> bool:
    """Positive evidence: a whole Decode batch line, or the start-up ServerArgs line."""
    if prose_or_source(filename):
        return False
    for line in head.splitlines()[:5000]:
        # the record follows the logger's "[time TP0] " prefix (or starts the line), not a quote
        if ("] Decode batch" in line or line.startswith("Decode batch")) and RUNNING.search(line):
            return bool(GEN_TPS.search(line))
        if re.search(r"(?:^|\] )server_args=ServerArgs\(model_path=", line):
            return True
    return False


def server_args(text: str) -> dict:
    """The few ServerArgs fields specdash uses, from the repr SGLang logs at start-up."""
    found: dict[str, int | str] = {}
    for key in ARG_KEYS:
        match = re.search(rf"\b{key}=(?:'([^']*)'|\"([^\"]*)\"|([^,)\s]+))", text)
        if match is None:
            continue
        value = next(group for group in match.groups() if group is not None)
        if value == "None":
            continue
        if key in INT_ARGS:
            if not value.lstrip("-").isdigit() or len(value) > 12:
                continue
            if int(value) < 1 and not key.startswith("speculative_"):
                continue
            found[key] = int(value)  # a speculative setting as stated: 0 or -2 steps is refused, not dropped
        else:
            found[key] = value[:1000]
    return found


def _rank_of(line: str) -> str:
    head = line[: line.find("]") + 1] if line.startswith("[") else ""
    return " ".join(RANKS.findall(head)) or "0"


class Server:
    """One start of the server: its arguments and intervals, and which ranks ran a prefill since their
    last Decode batch line."""

    def __init__(self, line: int) -> None:
        self.line = line
        self.args: dict = {}
        self.intervals = ServerIntervals()
        self.prefill: dict[str, float] = {}  # new tokens prefilled per rank since its last Decode batch line


def parse(stream: TextIO, path: str, link=None) -> Iterator:
    servers = [Server(1)]
    skipped = 0
    for number, text in bounded_lines(stream):
        if isinstance(text, TooLong):
            skipped += 1
            continue
        server = servers[-1]
        if "Decode batch" in text:
            line = strip_ansi(text)
            if not DECODE.search(line):
                continue
            running, gen = RUNNING.search(line), GEN_TPS.search(line)
            if running is None or gen is None:
                skipped += 1  # a cut-off last line, or a wording without throughput
                continue
            accept = ACCEPT.search(line)
            accept_length = float(accept[1]) if accept else None
            rank = _rank_of(line)
            server.intervals.add(
                Interval(
                    number,
                    rank,
                    int(running[1]),
                    float(gen[1]),
                    prefill=server.prefill.pop(rank, 0.0),
                    accept=accept_length,  # as stated: the rules judge it (ingest/rules/)
                )
            )
        elif "Prefill batch" in text and PREFILL.search(text):
            line = strip_ansi(text)
            rank = _rank_of(line)
            new_tokens = NEW_TOKENS.search(line)
            server.prefill[rank] = server.prefill.get(rank, 0.0) + (
                float(new_tokens[1]) if new_tokens else 1.0
            )
        elif "server_args=ServerArgs(" in text:
            match = SERVER_ARGS.search(strip_ansi(text))
            if server.intervals.intervals:  # a new start once the previous one has measured something
                server = Server(number)
                servers.append(server)
            server.intervals.fresh = True  # its first interval follows the start-up
            if match and not server.args:
                server.args = server_args(match[1])
    yield from starts_benchmarks(
        path,
        servers,
        lambda index, server, level, left, speculating, first: _benchmark(
            path, link, server, index, len(servers), level, left, skipped, speculating, first
        ),
        "#running-req: 0 on every 'Decode batch' line",
        "no 'Decode batch' lines with running requests and a throughput",
    )


def _benchmark(
    path,
    link,
    server: Server,
    index,
    starts,
    level: Level,
    server_left,
    skipped,
    speculating: bool | None = None,
    first: int | None = None,
) -> Iterator:
    args = server.args
    args_spec = algorithm_name(args.get("speculative_algorithm")) is not None
    if speculating is not None and speculating != args_spec:  # the start's settings are not this piece's
        args = {k: v for k, v in args.items() if not k.startswith("speculative_")}
    model = args.get("model_path") or args.get("served_model_name")
    deployment = choose_deployment(
        link, deployment_name("sglang", model, args.get("tp_size"), args.get("quantization"))
    )
    if deployment is None:
        yield missing_deployment(path, level.first_line)
        return
    algorithm = algorithm_name(args.get("speculative_algorithm"))
    if algorithm is None and level.accept_length is not None:
        algorithm = SPECULATION_UNKNOWN
    speculative = algorithm is not None
    drafter = drafter_of(algorithm, args.get("speculative_draft_model_path"), model)
    start = f"start {index + 1} of {starts} (line {server.line}), " if starts > 1 else ""
    if first is not None:
        start += f"{'speculating' if speculating else 'no speculation'} from line {first}, "
    yield from benchmark(
        path,
        level.first_line,
        deployment=deployment,
        engine="sglang",
        speculative_algorithm=algorithm,
        drafter_path=drafter,
        num_steps=args.get("speculative_num_steps") if speculative else None,
        topk=args.get("speculative_eagle_topk") if speculative else None,
        num_draft_tokens=args.get("speculative_num_draft_tokens") if speculative else None,
        concurrency=level.concurrency,
        concurrency_source="log",
        decode_tps=level.decode_tps,
        output_throughput=level.output_throughput,
        accept_length=level.accept_length if speculative else None,
        decode_tps_p10=level.decode_tps_p10,
        decode_tps_p90=level.decode_tps_p90,
        interval_count=len(level.used),
        label=f"server log, {start}{level.concurrency} running{LOWER_BOUND_NOTE if level.lower_bound else ''}",
        raw=stated_in(
            {
                "server_args": args,
                "server_start_line": server.line,
                "intervals": level.summary(server_left),
                "skipped_lines": skipped,
            },
            # every line of a speculating start: one impossible value is refused, whichever level it fell in
            [(i.line, i.accept) for i in server.intervals.intervals if i.accept is not None]
            if speculative
            else [],
        ),
    )


FORMATS = [Format(NAME, HELP, detect, parse, decode_errors="replace")]
