"""One scrape of a Prometheus text endpoint, parsed with prometheus_client's own parser into samples;
malformed text is an error naming its line, and nothing of that scrape is used."""

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime

from prometheus_client.parser import text_string_to_metric_families

from specdash.ingest.problems import Problem, format_report

# (label, value) pairs, sorted: one series of a metric
Labels = tuple[tuple[str, str], ...]
# A scrape larger than this is not an engine's /metrics (vLLM's is ~100 KB with every histogram).
MAX_SCRAPE_BYTES = 20_000_000


@dataclass(frozen=True, slots=True)
class Sample:
    name: str
    labels: Labels
    value: float

    def label(self, key: str) -> str | None:
        return dict(self.labels).get(key)


@dataclass(frozen=True)
class Scrape:
    """What one read of `/metrics` said, and when. `_created` samples (a counter's start time, which
    prometheus_client exposes beside it) are left out: a window needs values, not birthdays."""

    source: str  # the URL or file it was read from
    at: datetime  # when it was read (UTC)
    samples: dict[str, tuple[Sample, ...]]
    text: str = field(repr=False, default="")

    def series(self, name: str) -> tuple[Sample, ...]:
        return self.samples.get(name, ())

    def has(self, name: str) -> bool:
        return name in self.samples

    def line_of(self, sample: Sample) -> int | None:
        """The line a sample was written on (for a report), or None."""
        for number, line in _sample_lines(self.text):
            if line.startswith(sample.name) and _parses_to(line, sample):
                return number
        return None


class ExpositionError(ValueError):
    """A scrape that is not Prometheus text; `problems` say where."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__(format_report(problems))


def parse_scrape(text: str, source: str, at: datetime) -> Scrape:
    """The samples of one scrape. Raises ExpositionError naming the first malformed line, a duplicated
    series, or text that holds no sample at all."""
    if len(text) > MAX_SCRAPE_BYTES:
        raise ExpositionError([Problem(source, None, None, f"more than {MAX_SCRAPE_BYTES} bytes", "parse")])
    try:
        families = list(text_string_to_metric_families(text))
    except Exception as exc:  # the parser raises ValueError, and IndexError or KeyError on odd lines
        raise ExpositionError([_malformed(text, source, exc)]) from None
    samples: dict[str, list[Sample]] = {}
    seen: set[tuple[str, Labels]] = set()
    for family in families:
        for raw in family.samples:
            if raw.name.endswith("_created"):
                continue
            sample = Sample(raw.name, tuple(sorted(raw.labels.items())), float(raw.value))
            if (sample.name, sample.labels) in seen:
                raise ExpositionError([_duplicate(text, source, sample)])
            seen.add((sample.name, sample.labels))
            samples.setdefault(sample.name, []).append(sample)
    if not samples:
        raise ExpositionError(
            [Problem(source, None, None, "no samples: is this an engine's Prometheus /metrics?", "parse")]
        )
    return Scrape(source, at, {name: tuple(found) for name, found in samples.items()}, text)


def finite_value(scrape: Scrape, sample: Sample) -> float:
    """The sample's value; a NaN or infinite one (legal Prometheus, useless in a sum) is an error."""
    if math.isfinite(sample.value):
        return sample.value
    raise ExpositionError(
        [
            Problem(
                scrape.source, scrape.line_of(sample), sample.name, f"{sample.value} is not a finite number"
            )
        ]
    )


def _sample_lines(text: str) -> Iterator[tuple[int, str]]:
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            yield number, stripped


def _parses_to(line: str, sample: Sample) -> bool:
    try:
        found = [s for family in text_string_to_metric_families(line + "\n") for s in family.samples]
    except Exception:
        return False
    return any(s.name == sample.name and tuple(sorted(s.labels.items())) == sample.labels for s in found)


def _duplicate(text: str, source: str, sample: Sample) -> Problem:
    """A series written twice (the format allows each once): reported on its second line."""
    lines = [
        n for n, line in _sample_lines(text) if line.startswith(sample.name) and _parses_to(line, sample)
    ]
    where = f" (first on line {lines[0]})" if len(lines) > 1 else ""
    return Problem(
        source, lines[1] if len(lines) > 1 else None, sample.name, f"the same series twice{where}", "parse"
    )


def _parses(lines: list[str]) -> bool:
    try:
        for _ in text_string_to_metric_families("\n".join(lines) + "\n"):
            pass
    except Exception:
        return False
    return True


def _malformed(text: str, source: str, exc: Exception) -> Problem:
    """The line the parser stopped at: the shortest failing prefix of the text ends with it (the parser
    reads line by line, so every longer prefix fails too). The parser's own message names no line."""
    lines = text.splitlines()
    good, bad = 0, len(lines)  # a prefix of `good` lines parses, one of `bad` lines does not
    while bad - good > 1:
        middle = (good + bad) // 2
        if _parses(lines[:middle]):
            good = middle
        else:
            bad = middle
    culprit = lines[bad - 1] if 0 < bad <= len(lines) else ""
    name = culprit.strip().split("{", 1)[0].split(" ", 1)[0] or None
    detail = str(exc).strip() or type(exc).__name__
    return Problem(
        source,
        bad if lines else None,
        name if name and not name.startswith("#") else None,
        f"not Prometheus text ({detail}): {culprit.strip()[:120]!r}",
        "parse",
    )
