"""What the live-scrape tests share: a local Prometheus endpoint serving recorded exposition text on
127.0.0.1, and a clock that stamps each scrape with the time its scenario recorded it at.

A scenario file (tests/fixtures/live/*.prom) holds consecutive scrapes, each after a `# scrape t=SECONDS`
comment line (a comment, so every part is plain Prometheus text). The server answers each GET /metrics
with the scenario's next scrape and keeps answering the last one; `switch()` changes scenario mid-test."""

import re
import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.conftest import FIXTURES

LIVE = FIXTURES / "live"
EPOCH = datetime(2026, 11, 2, 9, 0, 0, tzinfo=UTC)
SCRAPE_MARK = re.compile(r"^# scrape t=(\d+(?:\.\d+)?)$", re.MULTILINE)
# Every test request is answered or refused well within this; a hung handler cannot hold a test.
HANDLER_TIMEOUT_SECONDS = 5.0


@dataclass(frozen=True)
class RecordedScrape:
    seconds: float  # when it was taken, from the scenario's first scrape
    text: str


def scenario(name: str) -> list[RecordedScrape]:
    """The scrapes of tests/fixtures/live/NAME (a file without marks is one scrape at t=0)."""
    text = (LIVE / name).read_text(encoding="utf-8")
    marks = list(SCRAPE_MARK.finditer(text))
    if not marks:
        return [RecordedScrape(0.0, text)]
    ends = [mark.start() for mark in marks[1:]] + [len(text)]
    return [
        RecordedScrape(float(mark[1]), text[mark.end() + 1 : end])
        for mark, end in zip(marks, ends, strict=True)
    ]


class MetricsServer:
    """`with MetricsServer("vllm_steady.prom") as server:` then GET `server.url`."""

    def __init__(self, name: str, status: int = 200):
        self.lock = threading.Lock()
        self.scrapes = scenario(name)
        self.position = 0
        self.status = status
        self.served: list[str] = []  # the scenario and scrape index of every answer, in order
        self.name = name
        self.generation = 0  # how many times the scenario was switched
        owner = self

        class Handler(BaseHTTPRequestHandler):
            timeout = HANDLER_TIMEOUT_SECONDS

            def do_GET(self):
                if self.path.split("?", 1)[0] != "/metrics":
                    self.send_error(404)
                    return
                status, body = owner.next_answer()
                self.send_response(status)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/metrics"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def next_answer(self) -> tuple[int, bytes]:
        with self.lock:
            index = min(self.position, len(self.scrapes) - 1)
            self.position += 1
            self.served.append(f"{self.name}#{index}")
            if self.status != 200:
                return self.status, b"engine is starting\n"
            return 200, self.scrapes[index].text.encode("utf-8")

    def switch(self, name: str, status: int = 200) -> None:
        """Serve another scenario from its first scrape on (an engine that changed behaviour)."""
        with self.lock:
            self.scrapes, self.position, self.status, self.name = scenario(name), 0, status, name
            self.generation += 1

    def __enter__(self) -> "MetricsServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


class RecordedClock:
    """Stamps each scrape with the time its scenario recorded it at, whatever the wall clock says; after
    a switch the new scenario's times follow the last stamp by one scrape interval (`gap`)."""

    def __init__(self, server: MetricsServer, gap: float = 15.0):
        self.server, self.gap = server, gap
        self.generation, self.offset, self.last = 0, 0.0, None

    def __call__(self) -> datetime:
        with self.server.lock:
            index = max(0, min(self.server.position - 1, len(self.server.scrapes) - 1))
            seconds = self.server.scrapes[index].seconds
            if self.server.generation != self.generation:
                self.generation = self.server.generation
                self.offset = (self.last if self.last is not None else 0.0) + self.gap - seconds
        self.last = self.offset + seconds
        return EPOCH + timedelta(seconds=self.last)
