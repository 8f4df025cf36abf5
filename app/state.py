"""The dashboard's connection to the store: one engine per URL (st.cache_resource), query results cached
with st.cache_data keyed on the URL and plain filters, and writes that clear those caches."""

from collections.abc import Callable
from typing import Any

import pandas as pd
import streamlit as st
from sqlalchemy import Engine

from specdash.answers import depth as depth_answers
from specdash.answers import whatif as whatif_answers
from specdash.answers.calibrate import calibrate_all
from specdash.app import identity
from specdash.app.board_frames import board_frame, choices_frame
from specdash.app.errors import show_failure
from specdash.app.frames import frame
from specdash.config import resolve_db_url
from specdash.costmodel.domain import SettingAtLoad, TauSource
from specdash.db import (
    acceptance,
    alerts,
    checkpoints,
    curves,
    deploy,
    depth_points,
    outcomes,
    profiles,
    queries,
)
from specdash.db import leaderboard as leaderboard_queries
from specdash.db import parity as parity_queries
from specdash.db import runs as run_store
from specdash.db.alert_rows import AlertGroup, MutedDiagnosis, RerunCandidate, SourceGap
from specdash.db.alerts import AlertFilters
from specdash.db.changes import ChangeEntry, acting_as, recent_changes
from specdash.db.engine import make_engine, reading, transaction
from specdash.db.faults import explain
from specdash.db.investigation import StatusChange
from specdash.db.leaderboard import LeaderboardFilter
from specdash.db.schema import SchemaOutOfDate, check_schema
from specdash.db.settings import get_gap_threshold
from specdash.ingest.links import LinkOptions
from specdash.ingest.pipeline import preview_ingest
from specdash.ingest.policy import IngestPolicy
from specdash.ingest.results import Preview
from specdash.ingest.sources import UploadSource
from specdash.masking import masked_url

PARITY_POINTS = 4000  # at most this many reach the parity plot; the largest gaps always among them
LATEST_RUNS = 50  # the Overview's latest-checkpoint table: runs with the newest checkpoints


def db_url() -> str:
    return resolve_db_url()


@st.cache_resource(show_spinner=False)
def get_engine(url: str, read_only: bool = False) -> Engine:
    return make_engine(url, read_only=read_only)


def engine() -> Engine:
    return get_engine(db_url(), identity.read_only())


def db_label() -> str:
    """The database URL as it may be shown: without its password, in whatever form it was given."""
    return masked_url(db_url())


def require_schema() -> None:
    """Stop the page with the fix spelled out when the database is missing or out of date."""
    try:
        check_schema(engine())
    except SchemaOutOfDate as exc:
        st.error(str(exc))
        st.stop()


def read(url: str, query: Callable, *args, **kwargs):
    """query(session, *args, **kwargs) on a read-only session of the store at `url`."""
    with reading(get_engine(url)) as session:
        return query(session, *args, **kwargs)


def writer() -> str:
    """Who the change history names for this page's writes; stops the page when nobody may write (read-only
    mode, or team mode without a signed-in user)."""
    if identity.read_only():
        st.warning(identity.READ_ONLY_MESSAGE, icon=":material/lock:")
        st.stop()
    user = identity.signed_in_user()
    if identity.trusted() and not user:
        st.warning(
            "Changes need a signed-in user (the reverse proxy's header or the login): nothing was saved.",
            icon=":material/lock:",
        )
        st.stop()
    return user or identity.UNNAMED_WRITER


def write(action: Callable, *args, **kwargs) -> Any:
    """Run `action(session, ...)` in one write transaction on the current database, as `writer()` in the
    change history, then drop every cached query result so each page shows what was written."""
    who = writer()
    try:
        with acting_as(who), transaction(engine()) as session:
            result = action(session, *args, **kwargs)
    except Exception as exc:
        if explain(exc, db_url()) is None:
            raise  # the page's own errors (a refused status change, a bad profile) are the page's to show
        show_failure(exc, "Saving")
        st.stop()
    clear_caches()
    return result


def clear_caches() -> None:
    """After anything writes to the store (an upload, a status change, a profile edit)."""
    st.cache_data.clear()


# How often an open page asks the store whether another process wrote to it.
LIVE_SECONDS = 3


@st.cache_resource(show_spinner=False)
def _seen_versions() -> dict[str, tuple]:
    """The store version each database's cached results were read at (one per server process)."""
    return {}


def sync_with_store(url: str) -> bool:
    """Drop every cached query result when the store changed since they were read (a CLI ingest, another
    browser's status change); True when it had. One cheap query (queries.store_version) per call."""
    version = read(url, queries.store_version)
    seen = _seen_versions()
    if seen.get(url) != version:
        if url in seen:
            st.cache_data.clear()
        seen[url] = version
    key = f"store_version {url}"
    mine = st.session_state.get(key)
    st.session_state[key] = version
    return mine is not None and mine != version


@st.fragment(run_every=LIVE_SECONDS)
def _watch_store(url: str) -> None:
    if sync_with_store(url):
        st.rerun()


def follow_store(url: str) -> None:
    """Keep the page showing what is stored: checked now, then every LIVE_SECONDS while the page is open;
    a change reruns the whole page (widgets keep their state)."""
    sync_with_store(url)
    _watch_store(url)


# --- Overview ----------------------------------------------------------------------------------------------
@st.cache_data(show_spinner=False)
def changes(url: str, limit: int = 200) -> pd.DataFrame:
    # "from" and "to" as the page has always headed them (Python keywords: not field names)
    history = frame(read(url, recent_changes, limit), ChangeEntry)
    return history.rename(columns={"from_value": "from", "to_value": "to"})


@st.cache_data(show_spinner=False)
def counts(url: str) -> dict:
    return read(url, queries.counts)


@st.cache_data(show_spinner=False)
def open_alert_counts(url: str) -> dict[str, int]:
    return read(url, queries.open_alert_counts)


@st.cache_data(show_spinner=False)
def gap_threshold(url: str) -> float:
    return read(url, get_gap_threshold)


@st.cache_data(show_spinner=False)
def prediction_sources(url: str) -> list[str]:
    return read(url, queries.prediction_sources)


@st.cache_data(show_spinner=False)
def parity(url: str, source: str) -> tuple[pd.DataFrame, int]:
    """The parity plot's frame (past PARITY_POINTS thinned) and how many benchmarks it stands for."""
    points = read(url, parity_queries.parity_points, source, PARITY_POINTS)
    return frame(points.rows, parity_queries.ParityPoint), points.total


@st.cache_data(show_spinner=False)
def latest_checkpoints(url: str, limit: int) -> pd.DataFrame:
    return frame(read(url, queries.latest_checkpoints, limit), queries.LatestCheckpoint)


@st.cache_data(show_spinner=False)
def top_alerts(url: str, limit: int, severities: tuple[str, ...] = ()) -> list[dict]:
    flt = AlertFilters(statuses=("open",), severities=severities)
    rows, _ = read(url, alerts.alert_page, flt, 0, limit, count=False)
    return rows


# --- Runs ------------------------------------------------------------------------------------------------
@st.cache_data(show_spinner=False)
def runs_table(url: str, search: str, include_archived: bool) -> pd.DataFrame:
    return frame(read(url, run_store.runs_table, search, include_archived), run_store.RunListing)


@st.cache_data(show_spinner=False)
def run_removal(url: str, run_ids: tuple[int, ...]):
    return read(url, run_store.run_removal, list(run_ids))


@st.cache_data(show_spinner=False)
def ingested_files(url: str) -> pd.DataFrame:
    return frame(read(url, run_store.ingested_files), run_store.IngestedFileEntry)


@st.cache_data(show_spinner=False)
def file_removal(url: str, file_id: int):
    return read(url, run_store.file_removal, file_id)


# --- Leaderboard -----------------------------------------------------------------------------------------
@st.cache_data(show_spinner=False)
def leaderboard_choices(url: str) -> dict:
    return read(url, leaderboard_queries.leaderboard_choices)


@st.cache_data(show_spinner=False)
def deploy_table(url: str, flt: LeaderboardFilter) -> pd.DataFrame:
    return choices_frame(read(url, deploy.deploy_view, flt))


@st.cache_data(show_spinner=False)
def leaderboard(url: str, flt: LeaderboardFilter, offset: int = 0, limit: int | None = None) -> pd.DataFrame:
    """A page of the ranking (every entry without a limit): at scale it has tens of thousands."""
    return board_frame(read(url, leaderboard_queries.leaderboard, flt, offset, limit))


@st.cache_data(show_spinner=False)
def leaderboard_size(url: str, flt: LeaderboardFilter) -> int:
    return read(url, leaderboard_queries.leaderboard_size, flt)


# --- Checkpoints -------------------------------------------------------------------------------------------
@st.cache_data(show_spinner=False)
def runs_frame(url: str) -> pd.DataFrame:
    return frame(read(url, queries.run_summaries), queries.RunSummary)


@st.cache_data(show_spinner=False)
def deployments_frame(url: str) -> pd.DataFrame:
    return frame(read(url, queries.deployment_summaries), queries.DeploymentSummary)


@st.cache_data(show_spinner=False)
def effective_profile(url: str, deployment_id: int, concurrency: int = 1) -> dict:
    return read(url, whatif_answers.effective_profile, deployment_id, concurrency=concurrency)


@st.cache_data(show_spinner=False)
def measured_by_depth(url: str, checkpoint_id: int, deployment_id: int, dataset: str | None) -> pd.DataFrame:
    rows = read(url, depth_points.measured_by_depth, checkpoint_id, deployment_id, dataset)
    return frame(rows, depth_points.DepthPoint)


@st.cache_data(show_spinner=False)
def depth_curve(
    url: str,
    checkpoint_id: int,
    deployment_id: int,
    concurrency: int,
    topk: int,
    max_steps: int | None,
    dataset: str | None,
    acceptance: str | None = None,
):
    return read(
        url,
        depth_answers.depth_curve,
        checkpoint_id,
        deployment_id,
        concurrency,
        topk,
        max_steps,
        dataset,
        TauSource(acceptance) if acceptance else None,
    )


@st.cache_data(show_spinner=False)
def default_max_steps(url: str, checkpoint_id: int, deployment_id: int) -> int:
    return read(url, depth_answers.checkpoint_max_steps, checkpoint_id, deployment_id)


@st.cache_data(show_spinner=False)
def checkpoints_frame(url: str, run_ids: tuple[int, ...]) -> pd.DataFrame:
    rows = read(url, checkpoints.checkpoint_summaries, list(run_ids))
    return frame(rows, checkpoints.CheckpointSummary)


@st.cache_data(show_spinner=False)
def benchmarked_deployments(url: str, checkpoint_ids: tuple[int, ...]) -> pd.DataFrame:
    rows = read(url, checkpoints.benchmarked_deployments, list(checkpoint_ids))
    return frame(rows, checkpoints.BenchmarkedDeployment)


@st.cache_data(show_spinner=False)
def speculation_settings(
    url: str, checkpoint_ids: tuple[int, ...], deployment_id: int
) -> list[SettingAtLoad]:
    return read(url, checkpoints.speculation_settings, list(checkpoint_ids), deployment_id)


@st.cache_data(show_spinner=False)
def benchmark_datasets(url: str, checkpoint_ids: tuple[int, ...], deployment_id: int) -> list[str]:
    return read(url, checkpoints.benchmark_datasets, list(checkpoint_ids), deployment_id)


@st.cache_data(show_spinner=False)
def checkpoint_comparison(
    url: str,
    checkpoint_ids: tuple[int, ...],
    deployment_id: int,
    setting: SettingAtLoad,
    dataset: str | None,
) -> pd.DataFrame:
    rows = read(url, checkpoints.checkpoint_comparison, list(checkpoint_ids), deployment_id, setting, dataset)
    return frame(rows, checkpoints.CheckpointComparison)


@st.cache_data(show_spinner=False)
def metric_keys(url: str, run_ids: tuple[int, ...]) -> list[str]:
    return read(url, checkpoints.metric_keys, list(run_ids))


@st.cache_data(show_spinner=False)
def training_curves(url: str, run_ids: tuple[int, ...], keys: tuple[str, ...]) -> pd.DataFrame:
    return frame(read(url, curves.training_curves, list(run_ids), list(keys)), curves.CurvePoint)


@st.cache_data(show_spinner=False)
def position_acceptance(
    url: str, checkpoint_ids: tuple[int, ...], from_benchmarks: bool = False
) -> pd.DataFrame:
    rows = read(url, checkpoints.position_acceptance, list(checkpoint_ids), from_benchmarks)
    return frame(rows, checkpoints.PositionAcceptance)


@st.cache_data(show_spinner=False)
def measured_acceptance(url: str, checkpoint_id: int, dataset: str | None):
    return read(url, acceptance.measured_acceptance, checkpoint_id, dataset)


# --- Settings ----------------------------------------------------------------------------------------------
@st.cache_data(show_spinner=False)
def parameter_sets(url: str) -> pd.DataFrame:
    return frame(read(url, profiles.parameter_sets), profiles.ParameterSetEntry)


@st.cache_data(show_spinner=False)
def profile_values(url: str, deployment_id: int) -> dict:
    return read(url, profiles.profile_values, deployment_id)


@st.cache_data(show_spinner=False)
def profile_revision(url: str, deployment_id: int) -> int:
    return read(url, profiles.profile_revision, deployment_id)


def applied_version(report) -> int | None:
    """The active calibrated set's version when it already holds this fit."""
    with reading(engine()) as session:
        return profiles.applied_version(session, report)


def run_calibration(deployment_id: int | None) -> tuple[list, list]:
    """Fit the deployment (or every one) now; the fit reads the store and writes nothing."""
    with reading(engine()) as session:
        return calibrate_all(session, deployment_id)


# --- Upload ------------------------------------------------------------------------------------------------
def upload_link(
    run: str | None, checkpoint: str | None, deployment: str | None, new_names: bool = False
) -> LinkOptions:
    """The Upload page's links and its look-alike box as the CLI's --run/--checkpoint/--deployment and
    --new-names, for the dry run and for the save alike."""
    return LinkOptions(run=run, checkpoint=checkpoint, deployment=deployment, new_names=new_names)


@st.cache_data(show_spinner=False, max_entries=32)
def preview_upload(
    url: str,
    file_id: str,
    name: str,
    _data: bytes,
    run: str | None,
    checkpoint: str | None,
    deployment: str | None,
    new_names: bool = False,
) -> Preview:
    """The ingest's preview (ingest/pipeline.py) of an uploaded file with these links; keyed on the upload's id,
    not its bytes (the leading underscore keeps Streamlit from hashing a file of up to 200 MB on every rerun)."""
    policy = IngestPolicy(link=upload_link(run, checkpoint, deployment, new_names))
    return preview_ingest(get_engine(url), UploadSource(name, _data), policy)


@st.cache_data(show_spinner=False)
def benchmark_outcomes(url: str, benchmark_ids: tuple[int, ...]) -> pd.DataFrame:
    return frame(read(url, outcomes.benchmark_outcomes, list(benchmark_ids)), outcomes.BenchmarkOutcome)


# --- Alerts ------------------------------------------------------------------------------------------------
@st.cache_data(show_spinner=False)
def alert_page(url: str, filters: AlertFilters, offset: int, limit: int, count: bool = True):
    return read(url, alerts.alert_page, filters, offset, limit, count)


@st.cache_data(show_spinner=False)
def alert_groups(url: str, filters: AlertFilters, by: str) -> pd.DataFrame:
    return frame(read(url, alerts.alert_groups, filters, by), AlertGroup)


@st.cache_data(show_spinner=False)
def mutes(url: str) -> pd.DataFrame:
    return frame(read(url, alerts.mutes), MutedDiagnosis)


@st.cache_data(show_spinner=False)
def alert_choices(url: str) -> dict[str, list[str]]:
    return read(url, alerts.alert_choices)


@st.cache_data(show_spinner=False)
def alert_detail(url: str, alert_id: int) -> dict | None:
    detail = read(url, alerts.alert_detail, alert_id)
    return detail and detail | {"analysis": frame(detail["analysis"], SourceGap)}


@st.cache_data(show_spinner=False)
def alert_history(url: str, alert_id: int) -> pd.DataFrame:
    return frame(read(url, alerts.alert_history, alert_id), StatusChange)


@st.cache_data(show_spinner=False)
def supersede_candidates(url: str, benchmark_id: int) -> pd.DataFrame:
    return frame(read(url, alerts.supersede_candidates, benchmark_id), RerunCandidate)
