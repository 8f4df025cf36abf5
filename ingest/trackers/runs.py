"""The run a tracker's store describes: its name, state, times, and what its params or config say of the
drafter, the same for every tracker."""

from collections.abc import Iterator
from datetime import UTC, datetime

from pydantic import ValidationError

from specdash.db.records import MAX_STEPS
from specdash.ingest.formats.base import Located
from specdash.ingest.formats.common import model_short_name, run_record
from specdash.ingest.problems import Problem
from specdash.ingest.setting import algorithm_name


def moment(millis) -> datetime | None:
    try:
        return datetime.fromtimestamp(int(millis) / 1000, tz=UTC) if millis else None
    except (TypeError, ValueError, OverflowError, OSError):
        return None


def _positive_int(text) -> int | None:
    try:
        value = int(str(text).strip())
    except ValueError:
        return None
    return value if 0 < value <= MAX_STEPS else None


def run_fields(name: str, status: str | None, start, end, params: dict[str, str], context: dict) -> dict:
    """RunRecord fields of a tracked run: its name, state and times, and what its params say of the drafter
    (`ttt_length`, `target_model_path` as SpecForge and speculators log their arguments)."""
    algorithm = params.get("speculative_algorithm") or params.get("strategy")
    target = params.get("target_model_path") or params.get("target_model") or params.get("verifier")
    started_at, ended_at = moment(start), moment(end)
    if ended_at and started_at and ended_at < started_at:
        ended_at = None
    return dict(
        name=name[:200],
        status=status or "finished",
        started_at=started_at,
        ended_at=ended_at,
        ttt_length=_positive_int(params.get("ttt_length")),
        target_model=model_short_name(target) if target else None,
        speculative_algorithm=algorithm_name(algorithm) if algorithm else None,
        config={**context, "params": dict(list(sorted(params.items()))[:100])},
    )


def announce(path: str, fields: dict) -> Iterator["Located | Problem"]:
    try:
        yield Located(None, run_record(**fields))
    except ValidationError as exc:
        for error in exc.errors(include_url=False):
            yield Problem(path, None, ".".join(str(p) for p in error["loc"]) or None, error["msg"])
