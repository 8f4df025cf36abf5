"""The Deploy view (top of the Overview, the Leaderboard's default): per target, deployment and load, the
checkpoint to serve and its setting, measured against predicted speedup with the band, and open alerts;
short unique names on screen, the full ones in their own column."""

import re

import pandas as pd
import streamlit as st

from specdash.app import state, tables
from specdash.app.alert_text import GAP_CONVENTION
from specdash.app.text import abbreviate, number_text
from specdash.db.leaderboard import LeaderboardFilter
from specdash.labels import setting_label


def drafter_label(run: str, target: str | None) -> str:
    """The drafter's name without its target's (the target has its own column): `lmsys/SGLang-EAGLE3-
    Llama-3.1-8B-Instruct-SpecForge` on Llama-3.1-8B-Instruct reads `lmsys/SGLang-EAGLE3-…-SpecForge`."""
    if not target or target == "-":
        return run
    shorter = re.sub(re.escape(target), "…", run, flags=re.IGNORECASE)
    if not shorter.strip("…-_/ "):
        return run
    org, _, rest = shorter.partition("/")
    # a hub organisation goes when what follows still says enough (`SGLang-EAGLE3-…-SpecForge`)
    return rest if rest and len(re.sub(r"[^A-Za-z]", "", rest)) >= 12 else shorter


def deployment_label(deployment: str, target: str | None) -> str:
    """The deployment without its target's name: `SpecBundle: Llama-3.1-8B-Instruct` reads `SpecBundle`."""
    if not target or target == "-":
        return deployment
    shorter = re.sub(re.escape(target), "", deployment, flags=re.IGNORECASE).strip(" :-,/")
    return shorter or deployment


def verdict_text(row) -> str:
    """Whether the measured speedup is inside the prediction's band, in words."""
    if pd.isna(row["within_band"]):
        return "no prediction" if pd.isna(row["predicted_speedup"]) else "no band"
    if row["within_band"]:
        return "as predicted"
    return (
        "faster than predicted"
        if row["measured_speedup"] > row["predicted_speedup"]
        else "slower than predicted"
    )


def deploy_frame(table: pd.DataFrame) -> pd.DataFrame:
    """The table as shown: short names, rounded numbers as text (`-`, never `None`)."""
    drafters = [drafter_label(r, t) for r, t in zip(table["run"], table["target_model"], strict=True)]
    short = abbreviate(drafters, 40)
    deployments = [
        deployment_label(d, t) for d, t in zip(table["deployment"], table["target_model"], strict=True)
    ]
    band = table["error_band"].map(lambda b: number_text(b * 100, 0, " %") if pd.notna(b) else "-")
    return pd.DataFrame(
        {
            "target": table["target_model"],
            "deployment": deployments,
            "load": table["concurrency"],
            "deploy": [
                short[d] if c == "published" else f"{short[d]} / {c}"
                for d, c in zip(drafters, table["checkpoint"], strict=True)
            ],
            "setting": table.apply(setting_label, axis=1),
            "measured": table["measured_speedup"].map(lambda v: number_text(v, 2, "×")),
            "predicted": table["predicted_speedup"].map(lambda v: number_text(v, 2, "×")),
            "band": band.map(lambda b: f"± {b}" if b != "-" else b),
            "verdict": table.apply(verdict_text, axis=1),
            "next best": table["runner_up_speedup"].map(lambda v: number_text(v, 2, "×")),
            "open alerts": table["open_alerts"].astype("Int64"),
            "drafter (full name)": table["run"] + " / " + table["checkpoint"],
        }
    )


def show(url: str, flt: LeaderboardFilter, key: str) -> pd.DataFrame:
    """Draw the view for the filter's deployment, load, dataset and prediction source; returns the rows."""
    table = state.deploy_table(url, flt)
    if table.empty:
        st.info(
            "Nothing to deploy yet: no checkpoint has a speculative benchmark with a baseline to compare."
        )
        return table
    tables.show(
        deploy_frame(table),
        hide_index=True,
        width="stretch",
        height=min(38 + 35 * len(table), 520),
        key=key,
        column_config={
            "target": st.column_config.TextColumn(width=170, help="the model being served"),
            "deployment": st.column_config.TextColumn(width=120),
            "load": st.column_config.NumberColumn(width=40, help="concurrency: requests decoded together"),
            "deploy": st.column_config.TextColumn(
                width=190, help="the checkpoint with the highest measured speedup here"
            ),
            "setting": st.column_config.TextColumn(width=95, help="algorithm steps/top-k/draft tokens"),
            "measured": st.column_config.TextColumn("measured", width=70, help="speedup over no speculation"),
            "predicted": st.column_config.TextColumn(
                "predicted", width=75, help=f"speedup the {flt.source} prediction gives"
            ),
            "band": st.column_config.TextColumn(width=55, help="the prediction's expected error"),
            "verdict": st.column_config.TextColumn(width=125, help="measured inside predicted ± band?"),
            "next best": st.column_config.TextColumn(width=70, help="the runner-up's measured speedup"),
            "open alerts": st.column_config.NumberColumn(width=70),
            "drafter (full name)": st.column_config.TextColumn(width="large"),
        },
    )
    st.caption(
        "Speedup = decode tok/s over no speculation on the same deployment, load and dataset"
        + (" (mean over datasets)" if flt.dataset is None else "")
        + f". {GAP_CONVENTION}"
    )
    return table
