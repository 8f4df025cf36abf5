"""The Deploy view (top of the Overview, the Leaderboard's default): per target, deployment and load, the
checkpoint to serve and its setting, measured against predicted speedup with the band, and open alerts;
short unique names on screen, the full ones in their own column."""

import re
from collections import Counter

import pandas as pd
import streamlit as st

from specdash.app import state, tables
from specdash.app.alert_text import GAP_CONVENTION
from specdash.app.text import abbreviate, number_text
from specdash.db.leaderboard import LeaderboardFilter
from specdash.labels import setting_label

# the characters each name column shows (its width below fits them at 1400 px); longer names are shortened
NAME_WIDTH = {"target": 22, "deployment": 20, "deploy": 28}
# each column's pixels: through the verdict they fit the view's ~940 px at 1400 px, the rest scroll into view
COLUMN_PX = {
    "target": 160,
    "deployment": 140,
    "load": 40,
    "deploy": 200,
    "setting": 95,
    "measured": 70,
    "predicted": 105,
    "verdict": 125,
    "next best": 70,
    "open alerts": 70,
}


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


def keep_tail(name: str, width: int) -> str:
    """A long name cut in the middle, keeping more of its end, where names of one family differ
    (`8x RTX PRO 6000, TP8, PCIe` reads `8x RTX…00, TP8, PCIe`)."""
    if len(name) <= width:
        return name
    head = (width - 1) // 3
    return name[:head] + "…" + name[-(width - 1 - head) :]


def target_labels(targets, width: int) -> dict[str, str]:
    """Each target as its column shows it: a long name drops the words most targets repeat (`Instruct`),
    then is cut in the middle keeping its tail; names that stay apart (`Qwen3-Coder-480B-A35B`)."""
    names = list(dict.fromkeys(str(t) for t in targets))
    counts = Counter(word for name in names for word in set(name.split("-")))
    frequent = {word for word, n in counts.items() if n > len(names) / 2}
    labels: dict[str, str] = {}
    for name in names:
        shorter = "-".join(w for w in name.split("-") if w not in frequent) if len(name) > width else name
        labels[name] = keep_tail(shorter or name, width)
    if len(set(labels.values())) < len(labels):  # two alike: cut the full names instead
        return {name: keep_tail(name, width) for name in names}
    return labels


# marks a verdict against the theory prediction where the chosen source has none (the caption says so)
THEORY_MARK = "*"


def verdict_text(row, source: str | None = None) -> str:
    """Whether the measured speedup is inside the prediction's band, in a word or two that fit the column
    at 1400 px ("as predicted (theory)" and "slower than predicted" were cut)."""
    if pd.isna(row["within_band"]):
        return "no prediction" if pd.isna(row["predicted_speedup"]) else "no band"
    # a winner the chosen source does not predict is compared with the theory prediction, marked
    by = THEORY_MARK if row.get("prediction_source", source) != source else ""
    if row["within_band"]:
        return "as predicted" + by
    return ("faster" if row["measured_speedup"] > row["predicted_speedup"] else "slower") + by


def deploy_frame(table: pd.DataFrame, source: str | None = None) -> pd.DataFrame:
    """The table as shown: short names, rounded numbers as text (`-`, never `None`)."""
    drafters = [drafter_label(r, t) for r, t in zip(table["run"], table["target_model"], strict=True)]
    short = abbreviate(drafters, NAME_WIDTH["deploy"])
    targets = target_labels(table["target_model"], NAME_WIDTH["target"])
    deployments = [
        keep_tail(deployment_label(d, t), NAME_WIDTH["deployment"])
        for d, t in zip(table["deployment"], table["target_model"], strict=True)
    ]
    band = table["error_band"].map(lambda b: number_text(b * 100, 0, " %") if pd.notna(b) else "-")
    return pd.DataFrame(
        {
            "target": [targets[str(t)] for t in table["target_model"]],
            "deployment": deployments,
            "load": table["concurrency"],
            "deploy": [
                short[d] if c == "published" else f"{short[d]} / {c}"
                for d, c in zip(drafters, table["checkpoint"], strict=True)
            ],
            "setting": table.apply(setting_label, axis=1),
            "measured": table["measured_speedup"].map(lambda v: number_text(v, 2, "×")),
            # with its band in one column, so the verdict is in view at 1400 px
            "predicted": [
                number_text(v, 2, "×") + (f" ± {b}" if b != "-" and pd.notna(v) else "")
                for v, b in zip(table["predicted_speedup"], band, strict=True)
            ],
            "verdict": table.apply(verdict_text, axis=1, source=source),
            "next best": table["runner_up_speedup"].map(lambda v: number_text(v, 2, "×")),
            "open alerts": table["open_alerts"].astype("Int64"),
            # a target shortened in its column is said in full here
            "drafter (full name)": [
                f"{r} / {c}" + (f", for {t}" if targets[str(t)] != str(t) else "")
                for r, c, t in zip(table["run"], table["checkpoint"], table["target_model"], strict=True)
            ],
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
        deploy_frame(table, flt.source),
        hide_index=True,
        width="stretch",
        height=min(38 + 35 * len(table), 520),
        key=key,
        column_config={
            "target": st.column_config.TextColumn(
                width=COLUMN_PX["target"],
                help="the model being served; a long name without the words most targets repeat (in full in "
                "the last column)",
            ),
            "deployment": st.column_config.TextColumn(
                width=COLUMN_PX["deployment"],
                help="the deployment without its target's name; a long one is cut in the middle",
            ),
            "load": st.column_config.NumberColumn(
                width=COLUMN_PX["load"], help="concurrency: requests decoded together"
            ),
            "deploy": st.column_config.TextColumn(
                width=COLUMN_PX["deploy"],
                help="the checkpoint with the highest measured speedup here (its name without the target's; "
                "the full name is in the last column)",
            ),
            "setting": st.column_config.TextColumn(
                width=COLUMN_PX["setting"], help="algorithm steps/top-k/draft tokens"
            ),
            "measured": st.column_config.TextColumn(
                "measured", width=COLUMN_PX["measured"], help="speedup over no speculation"
            ),
            "predicted": st.column_config.TextColumn(
                "predicted",
                width=COLUMN_PX["predicted"],
                help=f"speedup the {flt.source} prediction gives, ± its expected error (theory where the "
                f"{flt.source} one is missing: the verdict says so)",
            ),
            "verdict": st.column_config.TextColumn(
                width=COLUMN_PX["verdict"],
                help="measured inside predicted ± band (as predicted), else faster or slower than predicted; "
                f"{THEORY_MARK}: against the theory prediction",
            ),
            "next best": st.column_config.TextColumn(
                width=COLUMN_PX["next best"], help="the runner-up's measured speedup"
            ),
            "open alerts": st.column_config.NumberColumn(width=COLUMN_PX["open alerts"]),
            "drafter (full name)": st.column_config.TextColumn(width="large"),
        },
    )
    theory = (table["prediction_source"] != flt.source).any() if "prediction_source" in table else False
    st.caption(
        "Speedup = decode tok/s over no speculation on the same deployment, load and dataset"
        + (" (mean over datasets)" if flt.dataset is None else "")
        + f". {GAP_CONVENTION}"
        + (
            f" \\{THEORY_MARK} Compared with the theory prediction: the {flt.source} set does not cover that "
            "deployment."
            if theory
            else ""
        )
    )
    return table
