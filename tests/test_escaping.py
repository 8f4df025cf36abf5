"""Names from files stay text on every surface: Markdown and LaTeX on the pages, HTML in Plotly's hover and
legend, escape sequences on a terminal (the gaps table, check, CSV, ingest reports). Each test stores a
hostile name the way an older store (or a direct edit) could hold it, then reads the surface."""

import json
import re

import pytest
from click.testing import CliRunner
from sqlalchemy import update

from specdash.app import parity_charts
from specdash.app.frames import frame as as_frame
from specdash.app.text import md, plotly_text, unmd
from specdash.cli.main import cli
from specdash.db import parity
from specdash.db.engine import make_engine, reading, transaction
from specdash.db.models import Deployment, Run
from specdash.ingest.pipeline import ingest
from specdash.ingest.sources import UploadSource
from tests.app_support import run_page

MARKUP = "[x](https://tracker.example) <img src=https://tracker.example/p.gif> $\\frac{1}{2}$ :red[**run**]"
TERMINAL = "run\x1b[2J\x1b[H\rforged line\u202e"


def rename_story_run(url: str, name: str) -> None:
    with transaction(make_engine(url)) as session:
        session.execute(update(Run).where(Run.id == 1).values(name=name))


def test_markdown_escaping_round_trips_every_hostile_name():
    for name in (MARKUP, "a\\b", "*_`#>|~", "$x$ \\(y\\)"):
        assert unmd(md(name)) == name
        assert not set(re.sub(r"\\.", "", md(name))) & set("[]()<>$*`:")


def test_the_alert_header_shows_the_name_as_text(monkeypatch, demo_url):
    rename_story_run(demo_url, MARKUP)
    at = run_page(monkeypatch, demo_url, "views/alerts.py", {"alert": "3"})
    assert not at.exception
    header = at.subheader[0].value
    assert unmd(header) == f"Alert #3: {MARKUP} / epoch_3"
    assert not set(re.sub(r"\\.", "", header)) & set("[]()<>$*`")  # every markup character escaped


def test_the_parity_hover_and_legend_hold_no_html(demo_url):
    rename_story_run(demo_url, MARKUP + " %{x}")
    with reading(make_engine(demo_url)) as session:
        frame = as_frame(parity.parity_rows(session, "theory"), parity.ParityPoint)
    figure = parity_charts.parity_figure(frame, 0.1)
    texts = [str(trace.name) for trace in figure.data] + [
        str(cell)
        for trace in figure.data
        if trace.customdata is not None
        for row in trace.customdata
        for cell in row
    ]
    hostile = [t for t in texts if "tracker.example" in t]
    assert hostile, texts
    for text in hostile:
        assert "<img" not in text and "<a" not in text
        assert "&lt;img src=https://tracker.example/p.gif&gt;" in text
        assert "%{x}" not in text  # a template reference in a name is shown, not filled in


def test_upload_page_check_and_saved_summary_show_names_as_text(monkeypatch, db_url):
    name = "**big** <b>x</b> [y](https://tracker.example) $z$.jsonl"
    record = {"kind": "benchmark", "deployment": "**8x H100** <b>TP8</b>", "decode_tps": 90.0}
    at = run_page(monkeypatch, db_url, "views/upload.py")
    at.file_uploader[0].set_value((name, (json.dumps(record) + "\n").encode(), "application/json")).run()
    assert not at.exception
    check = next(m.value for m in at.markdown if "would add" in m.value)
    assert unmd(check).startswith(f"**{name}**")
    assert check.startswith(f"**{md(name)}**, ")  # the name as escaped text inside the page's own bold
    at.button(key="upload_save").click().run()
    saved = at.success[0].value
    assert unmd(saved).startswith(f"{name}: 1 record(s) as specdash")
    assert saved.startswith(f"{md(name)}\\: ")  # the whole summary goes through md()


@pytest.fixture
def hostile_terminal(demo_url):
    rename_story_run(demo_url, TERMINAL)
    with transaction(make_engine(demo_url)) as session:
        session.execute(update(Deployment).where(Deployment.id == 1).values(name="dep\x1b]0;owned\x07"))
    return demo_url


@pytest.mark.parametrize("args", [["gaps"], ["gaps", "--format", "csv"], ["check"]])
def test_terminal_output_carries_no_escape_sequence(hostile_terminal, args):
    result = CliRunner().invoke(cli, ["--db", hostile_terminal, *args])
    assert "\x1b" not in result.output and "\r" not in result.output and "\u202e" not in result.output
    assert "run\\x1b[2J\\x1b[H\\rforged line\\u202e" in result.output
    # every output line is a row: the name's carriage return and cursor moves forged none
    if args == ["gaps"]:
        assert all(line.startswith(("id", *"0123456789")) for line in result.output.splitlines())


def test_gaps_json_escapes_control_characters(hostile_terminal):
    result = CliRunner().invoke(cli, ["--db", hostile_terminal, "gaps", "--format", "json"])
    assert "\x1b" not in result.output
    assert TERMINAL in {row["run"] for row in json.loads(result.output)}


def test_ingest_reports_are_one_line_per_problem(engine):
    key = "colour\x1b[31m\nforged.jsonl:1: all good"
    data = (json.dumps({"kind": "run", "name": "r", key: 1}) + "\n").encode()
    result = ingest(engine, UploadSource("bad.jsonl", data))
    lines = [str(p) for p in result.problems]
    assert lines == [
        "bad.jsonl:1: colour\\x1b[31m\\nforged.jsonl:1: all good: Extra inputs are not permitted"
    ]


def test_names_with_control_characters_are_refused_at_ingest(engine):
    data = (json.dumps({"kind": "run", "name": TERMINAL}) + "\n").encode()
    result = ingest(engine, UploadSource("runs.jsonl", data))
    assert [str(p) for p in result.problems] == [
        "runs.jsonl:1: name: must not contain control characters ('\\x1b'): names are one line of text"
    ]


def test_plotly_text_escapes_markup_and_templates():
    assert plotly_text("<b>x</b> %{y} & more") == "&lt;b&gt;x&lt;/b&gt; &#37;{y} &amp; more"


@pytest.mark.parametrize(
    "char",
    ["\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2069", "\u200e", "\u200f", "\u061c"],
)
def test_names_with_bidirectional_controls_are_refused_at_ingest(engine, char):
    """A right-to-left override makes 'run-\u202egnp.exe' read as 'run-exe.png': refused on its line."""
    lines = [
        json.dumps({"kind": "run", "name": "ok"}),
        json.dumps({"kind": "benchmark", "deployment": f"box{char}8xH100", "decode_tps": 90.0}),
    ]
    result = ingest(engine, UploadSource("mixed.jsonl", ("\n".join(lines) + "\n").encode()))
    assert [str(p) for p in result.problems] == [
        f"mixed.jsonl:2: deployment: must not contain bidirectional control characters (U+{ord(char):04X}): "
        "they reorder the text shown around them"
    ]
    with reading(engine) as session:
        assert session.query(Run).count() == 0  # nothing of the file is stored
