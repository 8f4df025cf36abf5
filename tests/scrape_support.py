"""What the live-scrape tests share: a local Prometheus endpoint serving recorded exposition text on
127.0.0.1, and a clock that stamps each scrape with the time its scenario recorded it at.

A scenario file (tests/fixtures/live/*.prom) holds consecutive scrapes, each after a `# scrape t=SECONDS`
comment line (a comment, so every part is plain Prometheus text). The server answers each GET /metrics
with the scenario's next scrape and keeps answering the last one; `switch()` changes scenario mid-test."""

import re
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.conftest import FIXTURES

LIVE = FIXTURES / "live"
TLS = FIXTURES / "tls"
EPOCH = datetime(2026, 11, 2, 9, 0, 0, tzinfo=UTC)
SCRAPE_MARK = re.compile(r"^# scrape t=(\d+(?:\.\d+)?)$", re.MULTILINE)
# Every test request is answered or refused well within this; a hung handler cannot hold a test.
HANDLER_TIMEOUT_SECONDS = 5.0
# A misbehaving answer (a trickle, endless headers) gives up after this long, so a client that waits for
# it (the scraper before it had a deadline) is held this long, never for ever.
HOSTILE_SECONDS = 12.0
TRICKLE_SECONDS = 0.5  # between two bytes of a trickled answer


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

    def __init__(self, name: str, status: int = 200, tls: bool = False):
        self.lock = threading.Lock()
        self.scrapes = scenario(name)
        self.position = 0
        self.status = status
        self.served: list[str] = []  # the scenario and scrape index of every answer, in order
        self.name = name
        self.generation = 0  # how many times the scenario was switched
        # answers to come: a misbehaviour for a GET (by its 0-based number), given the body it would send
        self.tricks: dict[int, Trick] = {}
        self.tricked = threading.Event()  # set once a trick has started answering
        owner = self

        class Handler(BaseHTTPRequestHandler):
            timeout = HANDLER_TIMEOUT_SECONDS

            def do_GET(self):
                if self.path.split("?", 1)[0] != "/metrics":
                    self.send_error(404)
                    return
                number = len(owner.served)
                status, body = owner.next_answer()
                trick = owner.tricks.pop(number, None)
                if trick is not None:
                    owner.tricked.set()
                    trick(self, body)
                    self.close_connection = True
                    return
                self.send_response(status)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        scheme = "http"
        if tls:  # tests/fixtures/tls: a self-signed certificate for 127.0.0.1
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(TLS / "cert.pem", TLS / "key.pem")
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
            scheme = "https"
        self.url = f"{scheme}://127.0.0.1:{self.server.server_address[1]}/metrics"
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

    def misbehave(self, number: int, trick: "Trick") -> None:
        """Answer the GET numbered `number` (0-based, counting every GET served) with `trick`."""
        with self.lock:
            self.tricks[number] = trick

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


# A misbehaving answer: given the request's handler and the body a well-behaved answer would carry, it
# writes whatever it likes to the raw connection (handler.wfile) and returns; it never runs longer than
# HOSTILE_SECONDS, and it ends when the client goes away.
Trick = Callable[[BaseHTTPRequestHandler, bytes], None]
HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"


def _write(handler: BaseHTTPRequestHandler, data: bytes) -> bool:
    try:
        handler.wfile.write(data)
        handler.wfile.flush()
        return True
    except OSError:  # the client hung up
        return False


def _slowly(handler: BaseHTTPRequestHandler, head: bytes, drip: bytes) -> None:
    """`head` at once, then `drip` a byte at a time, TRICKLE_SECONDS apart, until HOSTILE_SECONDS pass."""
    if not _write(handler, head):
        return
    end = time.monotonic() + HOSTILE_SECONDS
    position = 0
    while time.monotonic() < end and _write(handler, drip[position % len(drip) : position % len(drip) + 1]):
        position += 1
        time.sleep(TRICKLE_SECONDS)


def trickled_body(handler: BaseHTTPRequestHandler, body: bytes) -> None:
    _slowly(handler, HEAD + f"Content-Length: {len(body)}\r\n\r\n".encode(), body)


def endless_headers(handler: BaseHTTPRequestHandler, body: bytes) -> None:
    _slowly(handler, HEAD, b"X-Padding: " + b"a" * 64 + b"\r\n")


def malformed_status_line(handler: BaseHTTPRequestHandler, body: bytes) -> None:
    _write(handler, b"HTTP/1.1 2OO OK\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


def too_many_headers(handler: BaseHTTPRequestHandler, body: bytes) -> None:
    padding = b"".join(b"X-Header-%d: %d\r\n" % (i, i) for i in range(150))
    _write(handler, HEAD + padding + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)


def truncated_chunked(handler: BaseHTTPRequestHandler, body: bytes) -> None:
    half = body[: len(body) // 2]
    head = HEAD + b"Transfer-Encoding: chunked\r\n\r\n"
    _write(handler, head + f"{len(body):x}\r\n".encode() + half)  # a chunk of the whole, half sent


def cut_at_line(fraction: float = 0.6) -> Trick:
    """The whole body's Content-Length, the body cut at the first line end past `fraction` of it."""

    def trick(handler: BaseHTTPRequestHandler, body: bytes) -> None:
        cut = body.index(b"\n", int(len(body) * fraction)) + 1
        _write(handler, HEAD + f"Content-Length: {len(body)}\r\n\r\n".encode() + body[:cut])

    return trick


def redirect(location: str) -> Trick:
    def trick(handler: BaseHTTPRequestHandler, body: bytes) -> None:
        _write(handler, f"HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\n\r\n".encode())

    return trick


def edited(edit: Callable[[str], str]) -> Trick:
    """A well-formed answer whose text is the scenario's, edited (a series dropped, a value changed)."""

    def trick(handler: BaseHTTPRequestHandler, body: bytes) -> None:
        text = edit(body.decode("utf-8")).encode("utf-8")
        _write(handler, HEAD + f"Content-Length: {len(text)}\r\n\r\n".encode() + text)

    return trick


def set_sample(name: str, value: str) -> Callable[[str], str]:
    """An edit giving every series of sample `name` the value `value`."""
    pattern = re.compile(rf"^({re.escape(name)}(?:\{{[^}}]*\}})?) \S+$", re.MULTILINE)

    def edit(text: str) -> str:
        changed, count = pattern.subn(rf"\g<1> {value}", text)
        assert count, f"no {name} in the scrape"
        return changed

    return edit


def drop_samples(prefix: str) -> Callable[[str], str]:
    def edit(text: str) -> str:
        return "\n".join(line for line in text.split("\n") if not line.startswith(prefix)) + "\n"

    return edit


def close_delimited(handler: BaseHTTPRequestHandler, body: bytes) -> None:
    """HTTP/1.0 style: no Content-Length, the body ends when the connection closes."""
    _write(handler, HEAD + b"\r\n" + body)
