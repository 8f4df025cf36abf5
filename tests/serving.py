"""Starting `specdash serve` on a free local port for the tests that talk to a real server."""

import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

SERVER_START_S = 40


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_serve(url: str, port: int, log: Path, **popen) -> subprocess.Popen:
    """`specdash serve` on 127.0.0.1:port, its output to `log`."""
    with log.open("w") as out:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "specdash",
                "--db",
                url,
                "serve",
                "--port",
                str(port),
                "--host",
                "127.0.0.1",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            **popen,
        )


def wait_until_served(base: str, server: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"specdash serve exited with {server.returncode}:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(f"{base}/_stcore/health", timeout=1) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    pytest.fail(f"specdash serve did not answer within {SERVER_START_S} s:\n{log.read_text()}")
