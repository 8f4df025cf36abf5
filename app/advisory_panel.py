"""Depth advisories on the pages (Overview, Checkpoints) and the webhook field of Settings: cached reads,
writes through state.write, and the drawing shared by the pages."""

from datetime import timedelta

import pandas as pd
import streamlit as st

from specdash.answers.advisories import save_advice_settings
from specdash.app import identity, state, tables
from specdash.app.frames import frame
from specdash.app.text import md
from specdash.db import advisories
from specdash.db.investigation import StatusChange
from specdash.db.models import GAP_STATUSES, utcnow

LIVE_SECONDS = 5  # how often a page looks for new lines while a log is being followed
LIVE_WINDOW = timedelta(minutes=10)  # a followed file read this recently: a follower is running


def keep_fresh(url: str) -> None:
    """Drop cached reads when another process (a follower, a CLI ingest) wrote since the last rerun; while
    a log is being followed, look again every LIVE_SECONDS so curves and advice follow the run."""
    stamp = state.read(url, advisories.live_stamp)
    known = st.session_state.get("live_stamp")
    if known is not None and known != stamp:
        state.clear_caches()
    st.session_state["live_stamp"] = stamp
    if state.read(url, advisories.following_since, utcnow() - LIVE_WINDOW):
        _watch(url, stamp)


@st.fragment(run_every=LIVE_SECONDS)
def _watch(url: str, stamp: tuple) -> None:
    st.caption(
        f":material/sensors: Following live logs: this page looks for new data every {LIVE_SECONDS} s."
    )
    if state.read(url, advisories.live_stamp) != stamp:
        st.rerun(scope="app")


@st.cache_data(show_spinner=False)
def advisory_rows(url: str, run_ids: tuple[int, ...] | None, open_only: bool) -> list[dict]:
    return state.read(
        url,
        advisories.advisory_rows,
        None if run_ids is None else list(run_ids),
        advisories.OPEN_STATUSES if open_only else (),
        open_only,
    )


@st.cache_data(show_spinner=False)
def open_count(url: str) -> int:
    return state.read(url, advisories.open_advisory_count)


@st.cache_data(show_spinner=False)
def history(url: str, advisory_id: int) -> pd.DataFrame:
    return frame(state.read(url, advisories.advisory_history, advisory_id), StatusChange)


@st.cache_data(show_spinner=False)
def webhook(url: str) -> str:
    """The saved webhook as it may be shown: masked (its token never reaches a page), "" when none."""
    from specdash.masking import masked_webhook
    from specdash.notify import get_webhook_url

    saved = state.read(url, get_webhook_url)
    return masked_webhook(saved) if saved else ""


@st.cache_data(show_spinner=False)
def notifications(url: str) -> list[dict]:
    from specdash.notify import notification_rows

    return state.read(url, notification_rows)


def show(rows: list[dict], key: str, editable: bool = False) -> None:
    """One box per advisory; with `editable`, its history and a status change."""
    for row in rows:
        holds = row["active"] and row["status"] in advisories.OPEN_STATUSES
        box = st.warning if holds else st.info
        status = row["status"] + ("" if row["active"] else ", no longer holds")
        box(
            f"**Advisory #{row['id']}** ({md(status)}), run **{md(row['run'])}**: {md(row['message'])}"
            + (f"\n\nNote: {md(row['note'])}" if row["note"] else ""),
            icon=":material/straighten:",
        )
        if editable:
            with st.expander(f"History and status of advisory #{row['id']}"):
                tables.show(
                    history(state.db_url(), row["id"]),
                    hide_index=True,
                    width="stretch",
                    key=f"{key}_history_{row['id']}",
                )
                with st.form(f"{key}_form_{row['id']}"):
                    cols = st.columns([1, 1, 2])
                    new_status = cols[0].selectbox(
                        "Status",
                        GAP_STATUSES,
                        index=GAP_STATUSES.index(row["status"]),
                        key=f"{key}_status_{row['id']}",
                    )
                    with cols[1]:
                        who = identity.who_input("Who", key=f"{key}_who_{row['id']}")
                    note = cols[2].text_input("Note", key=f"{key}_note_{row['id']}")
                    if st.form_submit_button("Save", icon=":material/save:"):
                        try:
                            state.write(advisories.change_advisory_status, row["id"], new_status, who, note)
                        except advisories.AdvisoryChangeError as exc:
                            st.error(str(exc))
                        else:
                            st.rerun()


def run_section(url: str, run_ids: tuple[int, ...]) -> None:
    """The Checkpoints page's advisories for the chosen runs (quiet when there are none)."""
    rows = advisory_rows(url, run_ids, False)
    if not rows:
        return
    st.subheader("Advisories")
    st.caption(
        "For each deployment a run is for, the cost model's best draft depth for the run's acceptance "
        "curve against its TTT length; refreshed as training metrics arrive."
    )
    show(rows, "checkpoints_advisory", editable=True)


def settings_section(url: str) -> None:
    """Settings: the webhook new alerts and advisories go to, the advisor's minimum gain, what was sent."""
    from specdash.notify import set_webhook_url

    st.subheader("Notifications and depth advice")
    st.caption(
        "New alerts and advisories raised by `specdash ingest` (and `--follow`, `watch`) are posted to this "
        "incoming webhook as Slack-compatible JSON, each once; `--notify URL` overrides it for one command."
    )
    saved = webhook(url)
    with st.form("settings_webhook"):
        # write-only: the saved URL carries its token, so the field starts empty whatever is saved
        hook = st.text_input(
            "Webhook URL" + (f" (saved: {md(saved)}; leave empty to keep it)" if saved else ""),
            value="",
            type="password",
            key="settings_webhook_url",
            placeholder="https://hooks.slack.com/services/...",
        )
        remove = st.checkbox("Remove the saved webhook", key="settings_webhook_remove") if saved else False
        gain = st.number_input(
            "Advise a deeper TTT when it gains at least (% tok/s)",
            min_value=0.0,
            max_value=100.0,
            value=round(state.read(url, advisories.get_min_gain) * 100, 2),
            step=1.0,
            key="settings_min_gain",
        )
        if st.form_submit_button("Save", icon=":material/save:"):
            try:
                if hook.strip() or remove:
                    state.write(set_webhook_url, "" if remove else hook)
                summary = state.write(save_advice_settings, gain / 100)
            except (ValueError, advisories.AdvisoryChangeError) as exc:
                st.error(str(exc))
            else:
                st.toast(f"Saved; {summary.advised} advisory(ies) hold for {summary.runs} run(s).")
                st.rerun()
    sent = notifications(url)
    if sent:
        tables.show(pd.DataFrame(sent), key="settings_notifications")
