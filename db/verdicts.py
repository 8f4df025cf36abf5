"""One verdict per benchmark, raised by refresh: which prediction judges it (VERDICT_ORDER), whether that is
an alert and why, and what a drafter's own history says its accept length should be.

The verdict lives on the benchmark's alert row with the investigation (status, note, history); changing
prediction source never opens a second alert. When a refresh stops raising an alert under investigation
(a calibration now explains its gap), the alert is resolved with a history entry saying why."""

import statistics
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from specdash.costmodel import Diagnosis, judge
from specdash.costmodel.diagnoses import _norm
from specdash.db.bulk import insert_rows, select_in, update_rows
from specdash.db.models import ACTIVE_STATUSES, Alert, AlertEvent, Benchmark, Checkpoint, Run

# Which prediction judges a benchmark, best first: the deployment's active calibration, else an external
# prediction (by name), else first-principles theory. The others stay visible as analysis.
VERDICT_ORDER = ("calibrated", "external", "theory")
REFRESH_WHO = "specdash refresh"
# At most this many of a drafter's latest earlier benchmarks make its accept-length reference.
HISTORY_WINDOW = 5


def verdict_rank(source: str) -> tuple[int, str]:
    kind = source if source in ("calibrated", "theory") else "external"
    return VERDICT_ORDER.index(kind), source


@dataclass(frozen=True, slots=True)
class Reference:
    """The accept length a drafter's own benchmarks lead one to expect, and which ones."""

    accept_length: float
    benchmark_ids: tuple[int, ...]
    text: str


@dataclass(slots=True)
class Candidate:
    """One prediction's judgement of a benchmark, before the best one is chosen."""

    source: str
    prediction_id: int
    gap: float
    threshold: float
    band: float | None
    diagnoses: list[Diagnosis]
    acceptance_factor: float | None
    accept_length_source: str | None
    version: int | None  # the parameter set's, for the history text


def acceptance_references(session: Session, checkpoint_ids: list[int], steps_of) -> dict[int, Reference]:
    """For every benchmark of these checkpoints (drafters without training metrics), the median measured
    accept length of the same drafter's trusted benchmarks on the same dataset and setting: the
    latest earlier ones (by measured_at when every one has it, else by id) at the same load, else at other
    loads; none for the first of its series.
    Trusted: not superseded, served with the drafter's own algorithm and hidden size, tau reported."""
    if not checkpoint_ids:
        return {}
    series: dict[tuple, list] = defaultdict(list)
    query = (
        select(
            Benchmark.id,
            Benchmark.checkpoint_id,
            Benchmark.dataset,
            Benchmark.num_steps,
            Benchmark.topk,
            Benchmark.num_draft_tokens,
            Benchmark.concurrency,
            Benchmark.accept_length,
            Benchmark.speculative_algorithm,
            Benchmark.draft_hidden_size,
            Benchmark.superseded_by_id,
            Benchmark.measured_at,
            Run.speculative_algorithm.label("drafter_algorithm"),
            Run.hidden_size.label("drafter_hidden_size"),
        )
        .join(Checkpoint, Benchmark.checkpoint_id == Checkpoint.id)
        .join(Run, Checkpoint.run_id == Run.id)
        .where(Benchmark.speculative_algorithm.is_not(None))
    )
    for row in select_in(session, query, Benchmark.checkpoint_id, checkpoint_ids):
        steps = steps_of(row)
        if steps is None:
            continue
        series[(row.checkpoint_id, row.dataset or "", steps, row.topk or 1, row.num_draft_tokens)].append(row)
    out = {}
    for (_, dataset, steps, topk, tokens), members in series.items():
        dated = all(m.measured_at is not None for m in members)
        members.sort(key=lambda m: (m.measured_at, m.id) if dated else (m.id,))
        order = {m.id: i for i, m in enumerate(members)}
        trusted = [m for m in members if _trusted(m)]
        for position, bench in enumerate(members):
            earlier = [m for m in trusted if order[m.id] < position]
            pick = _nearest(earlier, bench)
            if not pick:
                continue  # the first of its series: nothing came before it
            load = "the same" if pick[0].concurrency == bench.concurrency else "other"
            ids = tuple(m.id for m in pick)
            tau = statistics.median(m.accept_length for m in pick)
            setting = f"{steps}/{topk}/{tokens or '-'}"
            out[bench.id] = Reference(
                tau,
                ids,
                f"the median {tau:.2f} of its {len(ids)} earlier benchmark(s) on {dataset or 'the same dataset'} "
                f"at setting {setting} and {load} load ({', '.join(f'#{i}' for i in ids)})",
            )
    return out


def _trusted(row) -> bool:
    if row.superseded_by_id is not None or not row.accept_length or row.accept_length <= 0:
        return False
    served, trained = _norm(row.speculative_algorithm), _norm(row.drafter_algorithm)
    if served and trained and served != trained:
        return False
    fed, expected = row.draft_hidden_size, row.drafter_hidden_size
    return not (fed and expected and fed != expected)


def _nearest(earlier: list, bench) -> list:
    """Same load first, else other loads; the latest ones, at most HISTORY_WINDOW."""
    same = [m for m in earlier if m.concurrency == bench.concurrency]
    return (same or earlier)[-HISTORY_WINDOW:]


def write_verdicts(
    session: Session,
    candidates: dict[int, list[Candidate]],
    gap_ids: dict[tuple[int, int], int],
    now: datetime,
) -> int:
    """Judge each benchmark by its best candidate and store the verdict on its alert (bulk statements,
    no ORM object per benchmark); returns how many alerts were newly raised."""
    if not candidates:
        return 0
    ids = sorted(candidates)
    # plain alert rows (no joins: this runs over every benchmark on a full refresh); the source an alert was
    # judged against comes from the gaps at hand
    existing = {
        row.benchmark_id: row
        for row in select_in(
            session,
            select(
                Alert.benchmark_id,
                Alert.gap_id,
                Alert.is_alert,
                Alert.severity,
                Alert.code,
                Alert.reason,
                Alert.status,
                Alert.note,
            ),
            Alert.benchmark_id,
            ids,
        )
    }
    source_of_gap: dict[int, str | None] = {}
    raised, new_rows, changed, events = 0, [], [], []
    for benchmark_id in ids:
        best = min(candidates[benchmark_id], key=lambda c: verdict_rank(c.source))
        verdict = judge(
            best.gap,
            best.threshold,
            best.band,
            best.diagnoses,
            best.acceptance_factor,
            best.accept_length_source,
        )
        gap_id = gap_ids.get((benchmark_id, best.prediction_id))
        reason = f"against the {_source_text(best)} prediction: {verdict.reason}"
        values = dict(
            gap_id=gap_id,
            is_alert=verdict.is_alert,
            severity=verdict.severity,
            code=verdict.code,
            reason=reason,
        )
        old = existing.get(benchmark_id)
        if old is None:
            new_rows.append(
                dict(benchmark_id=benchmark_id, **values, status="open", note=None, updated_at=now)
            )
            raised += verdict.is_alert
            continue
        if tuple(values.values()) == (old.gap_id, old.is_alert, old.severity, old.code, old.reason):
            continue
        status, note = old.status, old.note
        if not source_of_gap:
            source_of_gap.update(_sources_of_gaps(candidates, gap_ids))
        old_source = source_of_gap.get(old.gap_id)
        if old.is_alert and not verdict.is_alert and status in ACTIVE_STATUSES:
            why = (
                f"the {best.source} prediction supersedes the {old_source} one"
                if old_source and old_source != best.source
                else "its prediction changed"
            )
            status, note = "resolved", f"no longer an alert: {why}; {reason}"
        elif not old.is_alert and verdict.is_alert:
            raised += 1
            if status == "resolved" and session.get(Benchmark, benchmark_id).superseded_by_id is None:
                status, note = "open", f"raised again: {reason}"
        if status != old.status:
            events.append(
                dict(
                    benchmark_id=benchmark_id,
                    at=now,
                    who=REFRESH_WHO,
                    from_status=old.status,
                    to_status=status,
                    note=note,
                )
            )
        changed.append(dict(benchmark_id=benchmark_id, **values, status=status, note=note, updated_at=now))
    insert_rows(session, Alert, new_rows)
    update_rows(session, Alert, changed, key="benchmark_id")
    insert_rows(session, AlertEvent, events)
    return raised


def _sources_of_gaps(candidates: dict[int, list[Candidate]], gap_ids: dict[tuple[int, int], int]) -> dict:
    """gap id -> the source of its prediction, for the gaps of the benchmarks judged."""
    source_of_prediction = {c.prediction_id: c.source for judged in candidates.values() for c in judged}
    return {gap_id: source_of_prediction.get(prediction_id) for (_, prediction_id), gap_id in gap_ids.items()}


def _source_text(candidate: Candidate) -> str:
    if candidate.source == "calibrated" and candidate.version is not None:
        return f"calibrated (parameter set v{candidate.version})"
    return candidate.source
