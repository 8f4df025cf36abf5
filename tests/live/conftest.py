"""Fixtures of the live tests: a local Prometheus endpoint serving recorded scrapes, and a fake clock."""

from datetime import UTC, datetime, timedelta

import pytest

from tests.live.metrics_server import MetricsServer

EPOCH = datetime(2026, 11, 2, 9, 0, 0, tzinfo=UTC)


@pytest.fixture
def metrics_server(request):
    """A MetricsServer on 127.0.0.1 (ephemeral port), serving the scenario named by
    `@pytest.mark.parametrize("metrics_server", ["vllm_steady.prom"], indirect=True)` or vllm_steady.prom."""
    name = getattr(request, "param", "vllm_steady.prom")
    with MetricsServer(name) as server:
        yield server


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


@pytest.fixture
def recorded_clock(metrics_server) -> RecordedClock:
    return RecordedClock(metrics_server)
