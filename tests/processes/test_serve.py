"""`specdash serve` is the server: a signal sent to its pid stops Streamlit and frees the port."""

import signal
import socket

import pytest
from click.testing import CliRunner

from specdash.cli.main import cli
from tests.serving import free_port, start_serve, wait_until_served

pytestmark = pytest.mark.slow


def port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_serve_stops_the_dashboard(tmp_path, signum):
    url = f"sqlite:///{tmp_path / 'specdash.db'}"
    assert CliRunner().invoke(cli, ["--db", url, "init"]).exit_code == 0
    port, log = free_port(), tmp_path / "serve.log"
    server = start_serve(url, port, log)
    try:
        wait_until_served(f"http://127.0.0.1:{port}", server, log)
        server.send_signal(signum)  # to `specdash serve` alone, as `kill <pid>` or Ctrl-C would
        server.wait(timeout=15)
        assert not port_open(port), f"port {port} still served after {signum.name}:\n{log.read_text()}"
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
