"""Every page with every name hostile: runs, checkpoints, deployments and datasets renamed to Markdown,
HTML and LaTeX (a link, an image fetched from another host, bold, colour, a formula), as an older store or
a direct edit could hold them. Whatever a page writes through Markdown (text, captions, headings, alerts,
toasts, expander and tab titles, metric and widget labels) holds the name only as escaped text: with the
escaped characters taken out, the tracker's host is nowhere."""

import re

import pytest
from sqlalchemy import select, update

from specdash.db.engine import make_engine, transaction
from specdash.db.models import Benchmark, Checkpoint, Deployment, Run
from tests.app_support import run_page

HOSTILE = "![i](https://tracker.example/p.gif) <b>x</b> :red[**r**] $\\frac{1}{2}$"
HOST = "tracker.example"
PAGES = [
    ("views/overview.py", None),
    ("views/leaderboard.py", None),
    ("views/runs.py", None),
    ("views/checkpoints.py", None),
    ("views/alerts.py", None),
    ("views/alerts.py", {"alert": "3"}),
    ("views/whatif.py", None),
    ("views/live.py", None),
    ("views/upload.py", None),
    ("views/settings.py", None),
]
# What an AppTest element shows through Markdown: its value (text elements) or its label (containers and
# widgets); selectbox options and tables are plain text and not read here.
MARKDOWN_VALUES = ("markdown", "caption", "latex", "title", "header", "subheader", "error", "warning", "info")
MARKDOWN_VALUES += ("success", "toast")
MARKDOWN_LABELS = ("expander", "tabs", "metric", "button", "checkbox", "toggle", "selectbox", "multiselect")
MARKDOWN_LABELS += ("radio", "text_input", "text_area", "number_input", "slider", "select_slider")


@pytest.fixture
def hostile_url(real_url):
    with transaction(make_engine(real_url)) as session:
        for model in (Run, Checkpoint, Deployment):
            for row_id in session.scalars(select(model.id)).all():
                session.execute(update(model).where(model.id == row_id).values(name=f"{HOSTILE} {row_id}"))
        session.execute(
            update(Benchmark).where(Benchmark.dataset.is_not(None)).values(dataset=f"{HOSTILE} d")
        )
    return real_url


def markdown_texts(at) -> list[str]:
    texts = []
    for kind in MARKDOWN_VALUES:
        texts += [str(getattr(element, "value", "")) for element in getattr(at, kind, [])]
    for kind in MARKDOWN_LABELS:
        texts += [str(getattr(element, "label", "")) for element in getattr(at, kind, [])]
    for metric in at.metric:
        texts.append(str(metric.value))
    return texts


def unescaped(text: str) -> str:
    return re.sub(r"\\.", "", text)


@pytest.mark.parametrize("page,query", PAGES, ids=[f"{p}{'?' + str(q) if q else ''}" for p, q in PAGES])
def test_no_page_renders_a_name_as_markup(monkeypatch, hostile_url, page, query):
    at = run_page(monkeypatch, hostile_url, page, query)
    assert not at.exception
    texts = markdown_texts(at)
    shown = [t for t in texts if "tracker" in t]
    leaks = [t for t in texts if HOST in unescaped(t)]
    assert not leaks, leaks
    if page in ("views/overview.py", "views/alerts.py", "views/whatif.py", "views/checkpoints.py"):
        assert shown, f"no name reached {page}'s text: the test would prove nothing"


def test_the_mute_toast_shows_the_deployment_as_text(monkeypatch, hostile_url):
    at = run_page(monkeypatch, hostile_url, "views/alerts.py", {"alert": "3"})
    at.text_input(key="alerts_who").input("ana")
    at.text_input(key="alerts_mute_reason_3").input("known: the EAGLE flag")
    next(b for b in at.button if b.label == "Mute").click().run()
    assert not at.exception
    toasts = [t.value for t in at.toast]
    assert any("is muted on" in t and "tracker" in t for t in toasts), toasts
    assert not [t for t in toasts if HOST in unescaped(t)]
