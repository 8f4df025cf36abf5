"""A local incoming-webhook receiver for the notification tests: records every POST it is sent."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Receiver:
    """Answers each POST with the next status in `statuses` (then 200); `hold` blocks answers until set."""

    def __init__(self, statuses: tuple[int, ...] = ()):
        self.bodies: list[dict] = []
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
