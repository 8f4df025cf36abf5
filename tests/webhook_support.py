"""A local incoming-webhook receiver for the notification tests: records every POST it is sent."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Receiver:
    """Answers each POST with the next status in `statuses` (then 200); `hold` blocks answers until set.
    A 3xx answer points to `location`; a GET (what a followed 302 turns a POST into) is answered 200 and
    counted in `gets`."""

    def __init__(self, statuses: tuple[int, ...] = (), location: str = ""):
        self.bodies: list[dict] = []
        self.location = location
        self.gets: list[str] = []
        self.statuses = list(statuses)
        self.hold = threading.Event()
        self.hold.set()
        self.entered = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length))
                receiver.entered.set()
                receiver.hold.wait(30)
                status = receiver.statuses.pop(0) if receiver.statuses else 200
                receiver.bodies.append({"status": status, "body": body})
                self.send_response(status)
                if 300 <= status < 400:
                    self.send_header("Location", receiver.location)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def do_GET(self):
                receiver.gets.append(self.path)
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "Receiver":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.hold.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)

    @property
    def delivered(self) -> list[dict]:
        return [b["body"] for b in self.bodies if 200 <= b["status"] < 300]
