"""Fixtures of the live-scrape tests: a local Prometheus endpoint serving recorded scrapes, and its clock."""

import pytest

from tests.scrape_support import MetricsServer, RecordedClock


@pytest.fixture
def metrics_server(request):
    """A MetricsServer on 127.0.0.1 (ephemeral port), serving the scenario named by
    `@pytest.mark.parametrize("metrics_server", ["vllm_steady.prom"], indirect=True)` or vllm_steady.prom."""
    name = getattr(request, "param", "vllm_steady.prom")
    with MetricsServer(name) as server:
        yield server


@pytest.fixture
def recorded_clock(metrics_server) -> RecordedClock:
    return RecordedClock(metrics_server)
