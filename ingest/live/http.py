"""One GET of an engine's `/metrics` under one deadline: connect, status line, headers and body all count
against it, the body is capped, nothing is followed (a redirect is a failed scrape), and a stop event is
looked at every few tenths of a second, so a trickling or endless answer costs one scrape, never the
scraper. Every way an answer can be wrong is a ScrapeFailed naming what was wrong."""

import errno
import os
import select
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

# How often a read waiting on the network looks at the stop event and the deadline.
POLL_SECONDS = 0.1
MAX_HEADER_BYTES = 64 * 1024
MAX_HEADERS = 100
MAX_LINE_BYTES = 8 * 1024
READ_BYTES = 64 * 1024
# Why a scrape was lost, as a scraper's summary counts them.
NO_ANSWER, BROKEN, CUT_SHORT, REDIRECTED = "no answer", "broken answer", "cut short", "redirected"


class ScrapeFailed(OSError):
    """The endpoint did not answer with metrics (refused, timed out, not 200, a broken answer): one scrape
    lost, `kind` saying how. An answer cut short (a body shorter than its Content-Length) also makes the
    window it falls in untrustworthy."""

    def __init__(self, message: str, kind: str = NO_ANSWER):
        super().__init__(message)
        self.kind = kind

    @property
    def inconsistent(self) -> bool:
        return self.kind == CUT_SHORT

    def __str__(self) -> str:
        return str(self.args[0])


class Stopped(Exception):
    """The stop event was set while a scrape was in flight."""


@dataclass(frozen=True)
class Answer:
    status: int
    reason: str
    headers: dict[str, str]  # lower-case names; a repeated header's values joined by ", "
    body: bytes


@dataclass
class Budget:
    """The deadline of one GET and the stop event it answers to."""

    deadline: float  # time.monotonic() after which the scrape is lost
    seconds: float
    stop: threading.Event | None

    def left(self, what: str) -> float:
        """How long the next wait may be (at most POLL_SECONDS); raises once stopped or past the deadline."""
        if self.stop is not None and self.stop.is_set():
            raise Stopped()
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise ScrapeFailed(f"no complete answer within {self.seconds:g} s (waiting for {what})")
        return min(left, POLL_SECONDS)


def http_get(
    url: str, deadline_seconds: float, max_body_bytes: int, stop: threading.Event | None = None
) -> Answer:
    """GET `url` (http or https) with everything under `deadline_seconds`; raises ScrapeFailed, or
    Stopped once `stop` is set."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ScrapeFailed("not an http(s) URL", BROKEN)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise ScrapeFailed("the port is not a number", BROKEN) from None
    budget = Budget(time.monotonic() + deadline_seconds, deadline_seconds, stop)
    sock = _connect(parts.hostname, port, budget)
    try:
        if parts.scheme == "https":
            sock = _tls(sock, parts.hostname, budget)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        host = parts.netloc.rpartition("@")[2]  # as written, [::1]:8000 included, without any user info
        request = (
            f"GET {path} HTTP/1.1\r\nHost: {host}\r\nAccept: text/plain;version=0.0.4\r\n"
            "Accept-Encoding: identity\r\nConnection: close\r\nUser-Agent: specdash-scrape\r\n\r\n"
        )
        _send(sock, request.encode("ascii", "strict"), budget)
        reader = _Reader(sock, budget)
        status, reason, headers = _head(reader)
        body = _body(reader, headers, max_body_bytes) if status == 200 else b""
        return Answer(status, reason, headers, body)
    except UnicodeEncodeError:
        raise ScrapeFailed("not an ASCII URL", BROKEN) from None
    finally:
        sock.close()


def _connect(host: str, port: int, budget: Budget) -> socket.socket:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise ScrapeFailed(f"cannot resolve {host}: {exc.strerror or exc}") from None
    error: OSError | None = None
    for family, kind, proto, _, address in infos:
        sock = socket.socket(family, kind, proto)
        sock.setblocking(False)
        try:
            code = sock.connect_ex(address)
            while code in (errno.EINPROGRESS, errno.EALREADY, errno.EWOULDBLOCK):
                _, writable, _ = select.select([], [sock], [], budget.left("the connection"))
                if writable:
                    code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if code == 0:
                return sock
            error = OSError(code, os.strerror(code))
        except BaseException:
            sock.close()
            raise
        sock.close()
    raise ScrapeFailed(f"cannot connect: {error.strerror if error else 'no address'}")


def _tls(sock: socket.socket, host: str, budget: Budget) -> socket.socket:
    context = ssl.create_default_context()
    wrapped = context.wrap_socket(sock, server_hostname=host, do_handshake_on_connect=False)
    try:
        while True:
            try:
                wrapped.do_handshake()
                return wrapped
            except ssl.SSLWantReadError:
                select.select([wrapped], [], [], budget.left("the TLS handshake"))
            except ssl.SSLWantWriteError:
                select.select([], [wrapped], [], budget.left("the TLS handshake"))
            except (ssl.SSLError, OSError) as exc:
                raise ScrapeFailed(f"TLS: {exc}") from None
    except BaseException:
        wrapped.close()  # it owns the connection now
        raise


def _send(sock: socket.socket, data: bytes, budget: Budget) -> None:
    view = memoryview(data)
    while view:
        _, writable, _ = select.select([], [sock], [], budget.left("the request to be sent"))
        if writable:
            try:
                sent = sock.send(view)
            except (BlockingIOError, ssl.SSLWantWriteError, ssl.SSLWantReadError):
                continue
            except OSError as exc:
                raise ScrapeFailed(f"connection lost sending the request: {exc.strerror or exc}") from None
            view = view[sent:]


class _Reader:
    """Buffered reads off a non-blocking socket, each wait bounded by the budget."""

    def __init__(self, sock: socket.socket, budget: Budget):
        self.sock, self.budget, self.buffer, self.closed = sock, budget, bytearray(), False

    def fill(self, what: str) -> bool:
        """Read what has arrived into the buffer; False once the server closed the connection."""
        if self.closed:
            return False
        pending = isinstance(self.sock, ssl.SSLSocket) and self.sock.pending()
        if not pending:
            readable, _, _ = select.select([self.sock], [], [], self.budget.left(what))
            if not readable:
                return True
        try:
            data = self.sock.recv(READ_BYTES)
        except (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
            return True
        except OSError as exc:
            raise ScrapeFailed(f"connection lost reading {what}: {exc.strerror or exc}") from None
        if not data:
            self.closed = True
            return False
        self.buffer += data
        return True

    def line(self, what: str, limit: int = MAX_LINE_BYTES) -> bytes | None:
        """One CRLF- (or LF-) ended line without its end; None if the connection closed first."""
        while True:
            end = self.buffer.find(b"\n")
            if end >= 0:
                line = bytes(self.buffer[:end])
                del self.buffer[: end + 1]
                return line.rstrip(b"\r")
            if len(self.buffer) > limit:
                raise ScrapeFailed(f"{what} longer than {limit} bytes", BROKEN)
            if not self.fill(what):
                return None

    def exactly(self, count: int, what: str) -> bytes:
        """`count` bytes, or as many as came before the connection closed."""
        while len(self.buffer) < count and self.fill(what):
            pass
        data = bytes(self.buffer[:count])
        del self.buffer[:count]
        return data

    def rest(self, limit: int, what: str) -> bytes:
        """Everything up to the connection's close, or a byte more than `limit`."""
        while self.fill(what):
            if len(self.buffer) > limit:
                break
        data = bytes(self.buffer)
        self.buffer.clear()
        return data


def _head(reader: _Reader) -> tuple[int, str, dict[str, str]]:
    status_line = reader.line("the status line")
    if status_line is None:
        raise ScrapeFailed("the connection closed before any answer")
    status, reason = _status(status_line)
    headers: dict[str, str] = {}
    count = size = 0
    while True:
        line = reader.line("the headers")
        if line is None:
            raise ScrapeFailed("the connection closed in the middle of the headers", BROKEN)
        if not line:
            return status, reason, headers
        count, size = count + 1, size + len(line)
        if count > MAX_HEADERS:
            raise ScrapeFailed(f"more than {MAX_HEADERS} headers", BROKEN)
        if size > MAX_HEADER_BYTES:
            raise ScrapeFailed(f"headers longer than {MAX_HEADER_BYTES} bytes", BROKEN)
        name, colon, value = line.decode("latin-1").partition(":")
        if not colon or not name or name != name.strip():
            raise ScrapeFailed(f"malformed header line: {line[:80]!r}", BROKEN)
        key, value = name.lower(), value.strip()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value


def _status(line: bytes) -> tuple[int, str]:
    text = line.decode("latin-1")
    version, _, rest = text.partition(" ")
    code, _, reason = rest.partition(" ")
    if version not in ("HTTP/1.0", "HTTP/1.1") or len(code) != 3 or not code.isdigit():
        raise ScrapeFailed(f"malformed status line: {text[:80]!r}", BROKEN)
    return int(code), reason.strip()


def _body(reader: _Reader, headers: dict[str, str], limit: int) -> bytes:
    encoding = headers.get("content-encoding", "identity").lower()
    if encoding not in ("", "identity"):
        raise ScrapeFailed(f"a body in content encoding {encoding!r}, not asked for", BROKEN)
    transfer = headers.get("transfer-encoding", "").lower()
    if transfer:
        if transfer != "chunked":
            raise ScrapeFailed(f"transfer encoding {transfer!r} not understood", BROKEN)
        return _chunked(reader, limit)
    if "content-length" in headers:
        length = headers["content-length"]
        if not length.isdigit():
            raise ScrapeFailed(f"malformed Content-Length: {length[:40]!r}", BROKEN)
        expected = int(length)
        if expected > limit:
            raise ScrapeFailed(f"a body of {expected} bytes, more than the {limit} a scrape may have", BROKEN)
        body = reader.exactly(expected, "the body")
        if len(body) < expected:
            raise ScrapeFailed(
                f"the body ended after {len(body)} of its {expected} bytes (Content-Length)", CUT_SHORT
            )
        return body
    body = reader.rest(limit, "the body")
    if len(body) > limit:
        raise ScrapeFailed(f"a body of more than the {limit} bytes a scrape may have", BROKEN)
    return body


def _chunked(reader: _Reader, limit: int) -> bytes:
    body = bytearray()
    while True:
        size_line = reader.line("a chunk's size")
        if size_line is None:
            raise ScrapeFailed("the chunked body ended before its last chunk", CUT_SHORT)
        size_text = size_line.split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            raise ScrapeFailed(f"malformed chunk size: {size_line[:40]!r}", BROKEN) from None
        if size < 0 or len(body) + size > limit:
            raise ScrapeFailed(f"a body of more than the {limit} bytes a scrape may have", BROKEN)
        if size == 0:
            while (trailer := reader.line("the trailers")) is not None and trailer:
                pass
            return bytes(body)
        chunk = reader.exactly(size, "a chunk")
        if len(chunk) < size or reader.line("a chunk's end") != b"":
            raise ScrapeFailed("the chunked body ended in the middle of a chunk", CUT_SHORT)
        body += chunk
