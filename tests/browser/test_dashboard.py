"""The dashboard served by `specdash serve`, driven in Debian's headless Chromium through Python Playwright.
One server a session (the demo with the real SpecBundle results, an applied calibration and four scraped
live windows) and one browser: every page in the light and the dark theme (What-if on a drafter without
training metrics, the Leaderboard's link to the Checkpoints overlay, a profile edit), then, last since it
writes, a benchmark uploaded through the page's file input becomes an alert on the Alerts page. On every
chart of every page, in both themes, the legend's box must not cross a tick label or an axis title, and on
the What-if page every annotation (the optimum's label) lies inside its plot area.

Screenshots are taken only when asked: with SPECDASH_SCREENSHOTS=DIR every page is saved, the Overview,
Leaderboard, Checkpoints, Alerts and What-if (and the dark Leaderboard) are copied to DIR (the pictures of
the README and docs/dashboard.md), and every page of both themes at 1400x900 to DIR/img, with a few parts
further down a page (Checkpoints by draft depth, Settings' profiles and parameter sets) scrolled to the
top: `SPECDASH_SCREENSHOTS=docs .venv/bin/python -m pytest tests/browser`."""

import contextlib
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path
from urllib.parse import quote

import pytest
from click.testing import CliRunner
from playwright.sync_api import expect

from specdash.app.deploy_panel import COLUMN_PX as DEPLOY_COLUMN_PX
from specdash.cli.main import cli
from specdash.db.alerts import change_status
from specdash.db.engine import make_engine, transaction
from tests.conftest import FIXTURES
from tests.serving import free_port, start_serve, wait_until_served

# one worker runs them all (`make test` hands out whole files: --dist loadfile), against one server
pytestmark = pytest.mark.browser
SCREENSHOTS = os.environ.get("SPECDASH_SCREENSHOTS")

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
PAGE_WAIT_MS = 90_000  # a shared CI machine can be slow
WIDTH = 1400
UPLOAD = FIXTURES / "dashboard" / "deep_rerun.json"
SPECBUNDLE = FIXTURES / "real" / "specbundle-data.json"


@contextlib.contextmanager
def serving(folder: Path, commands: list[list[str]]):
    """Base URL of `specdash serve` on a fresh database prepared by `commands`; the server always stops."""
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} is missing: install Debian's chromium package (apt-get install -y chromium; "
            ".ci/run does) to run the browser test"
        )
    url = f"sqlite:///{folder / 'specdash.db'}"
    runner = CliRunner()
    for command in commands:
        result = runner.invoke(cli, ["--db", url, *command], catch_exceptions=False)
        assert result.exit_code == 0, result.output
    port = free_port()
    log = folder / "serve.log"
    # its own process group, so that whatever it starts stops with it
    server = start_serve(url, port, log, start_new_session=True)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_until_served(base, server, log)
        yield base
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


@pytest.fixture(scope="session")
def served(tmp_path_factory):
    """Base URL of a dashboard serving the demo, the real SpecBundle results, an applied calibration of every
    deployment and four live windows; its database folder."""
    folder = tmp_path_factory.mktemp("browser")
    commands = [["init"], ["demo"], ["ingest", str(SPECBUNDLE)], ["calibrate", "--apply"], *LIVE_WINDOWS]
    with serving(folder, commands) as base:
        yield base, folder


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        yield chromium
        chromium.close()


def settle(page) -> None:
    """Wait for the script run to finish and the charts to draw."""
    page.wait_for_function(
        "!document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=PAGE_WAIT_MS
    )
    page.wait_for_load_state("networkidle")
    # tables and inputs are drawn by components loaded on demand: a grey skeleton until they are
    page.wait_for_function("!document.querySelector('[data-testid=\"stSkeleton\"]')", timeout=PAGE_WAIT_MS)
    page.wait_for_timeout(600)


def snap(page, path: Path) -> None:
    """What the window shows, saved only when screenshots are asked for (SPECDASH_SCREENSHOTS)."""
    if SCREENSHOTS:
        page.screenshot(path=str(path), timeout=PAGE_WAIT_MS)


def screenshot(page, path: Path, keep_size: bool = False) -> None:
    """The whole page drawn: the viewport grows to the content's height (Streamlit scrolls inside its main
    area; charts below the fold are drawn only once in view), saved when asked; `keep_size` leaves it so."""
    bottom = page.evaluate(
        "document.querySelector('[data-testid=stMainBlockContainer]').getBoundingClientRect().bottom"
    )
    page.set_viewport_size({"width": WIDTH, "height": int(bottom) + 40})
    page.wait_for_timeout(800)  # Plotly redraws at the new size
    snap(page, path)
    if not keep_size:
        page.set_viewport_size({"width": WIDTH, "height": 900})


# Every Plotly chart on a page: the legend's box against the boxes of the axis tick labels and titles.
LEGEND_CLASHES = """() => {
  const clashes = [];
  document.querySelectorAll('.js-plotly-plot').forEach((plot, i) => {
    const legend = plot.querySelector('g.legend');
    if (!legend) return;
    const l = legend.getBoundingClientRect();
    if (!l.width || !l.height) return;
    plot.querySelectorAll('g.xtick text, g.ytick text, .xtitle, .ytitle').forEach(t => {
      const r = t.getBoundingClientRect();
      if (!r.width || !r.height) return;
      if (r.right > l.left && r.left < l.right && r.bottom > l.top && r.top < l.bottom)
        clashes.push(`chart ${i}: legend over "${t.textContent}"`);
    });
  });
  return clashes;
}"""


# Every annotation (the What-if's optimum label, a depth line's note) inside its chart's plot area: a label
# cut by the plot's edge or running into an axis read "K=4: 204 tok/s (2." before.
ANNOTATIONS_OUTSIDE = """() => {
  const outside = [];
  document.querySelectorAll('.js-plotly-plot').forEach((plot, i) => {
    const area = plot.querySelector('.nsewdrag');
    if (!area) return;
    const a = area.getBoundingClientRect();
    plot.querySelectorAll('g.annotation-text-g').forEach(t => {
      const r = t.getBoundingClientRect();
      if (!r.width || !r.height) return;
      if (r.left < a.left - 1 || r.right > a.right + 1 || r.top < a.top - 1 || r.bottom > a.bottom + 1)
        outside.push(`chart ${i}: "${t.textContent}" outside the plot area`);
    });
  });
  return outside;
}"""


# Cells of a table's text columns wider than their column (the grid draws on a canvas and cuts a long value at
# the column's edge): each visible cell's text measured in the grid's font, plus its 8 px padding each side,
# against the width the page gives the column; the Deploy view's verdict read "as predicted (theory" before.
CELLS_CUT = """([which, widths]) => {
  const table = document.querySelectorAll('[data-testid=stDataFrame] table')[which];
  const heads = [...table.querySelectorAll('thead th')].map(h => h.textContent);
  const measure = document.createElement('canvas').getContext('2d');
  measure.font = '14px "Source Sans", sans-serif';
  const cut = [];
  for (const [column, width] of Object.entries(widths)) {
    const at = heads.indexOf(column);
    if (at < 0) { cut.push(`no column ${column}`); continue; }
    table.querySelectorAll('tbody tr').forEach(row => {
      const text = row.children[at].textContent;
      if (measure.measureText(text).width + 16 > width) cut.push(`${column}: "${text}" wider than ${width} px`);
    });
  }
  return cut;
}"""


def locate(page, text: str):
    """The elements reading `text`, or matching `css=...`."""
    return page.locator(text) if text.startswith("css=") else page.get_by_text(text, exact=False)


def scroll_to(page, text: str) -> None:
    """Scroll the page's main area so the first element reading `text` (or matching `css=...`) is at the
    top, charts drawn."""
    locate(page, text).first.evaluate("e => e.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(1200)  # charts scrolled into view draw themselves


def legend_clashes(page) -> list[str]:
    return page.evaluate(LEGEND_CLASHES)


def open_page(page, base: str, path: str, ready_text: str) -> None:
    page.goto(f"{base}/{path}")
    page.get_by_text(ready_text, exact=False).first.wait_for(timeout=PAGE_WAIT_MS)
    settle(page)
    exceptions = page.locator('[data-testid="stException"]')
    assert exceptions.count() == 0, exceptions.first.inner_text()


# --- the demo with the real SpecBundle results, in the light and the dark theme --------------------------
SB_DRAFTER = "lmsys/SGLang-EAGLE3-Qwen3-30B-A3B-Instruct-2507-SpecForge"
SB_DEPLOYMENT = "SpecBundle: Llama-3.1-8B-Instruct"
PCIE = "8x RTX PRO 6000, TP8, PCIe"
REAL_PAGES = [
    ("", "overview", "Deploy: the checkpoint to serve"),
    ("leaderboard", "leaderboard", "Select a row to open it"),
    ("checkpoints", "checkpoints", "Acceptance per draft position"),
    (f"checkpoints?run={quote(SB_DRAFTER)}", "checkpoints-specbundle", "Acceptance per draft position"),
    ("runs", "runs", "Ingested files"),
    ("upload", "upload", "Benchmark results, training logs"),
    (f"alerts?run={quote(SB_DRAFTER)}", "alerts", "Investigation"),
    (f"whatif?run={quote(SB_DRAFTER)}", "whatif", "Best at"),
    ("live", "live", "Deployment and drafter"),
    ("settings", "settings", "Deployment profiles"),
]
# parts further down a page, each as a 1400x900 window shows it scrolled to there: (page, text at the top, name)
SCROLLED = [
    ("checkpoints-specbundle", "By draft depth", "checkpoints-depth"),
    ("checkpoints-specbundle", "Acceptance per draft position", "checkpoints-acceptance"),
    ("leaderboard", "css=[data-testid=stDataFrame] >> nth=1", "leaderboard-table"),
    ("settings", "Deployment profiles", "settings-profiles"),
    ("settings", "Parameter sets", "settings-sets"),
]
# four 15 s windows of a scraped vLLM server whose acceptance collapses and recovers, for the Live page
ONCE = FIXTURES / "live" / "once"
SCRAPES = ["vllm_t0", "vllm_t15", "vllm_collapsed_t30", "vllm_collapsed_t45", "vllm_recovered_t60"]
LIVE_WINDOWS = [
    ["scrape", "--once", str(ONCE / f"{a}.prom"), str(ONCE / f"{b}.prom"), "--seconds", "15"]
    + ["--deployment", "pcie-box", "--run", "r7", "--checkpoint", "epoch_2"]
    for a, b in zip(SCRAPES, SCRAPES[1:], strict=False)
]
# the Deploy view's columns whose values are never shortened (names are, keeping their tail)
READ_WHOLE = ("measured", "predicted", "verdict", "next best")
PICTURES = ("overview", "leaderboard", "checkpoints", "alerts", "whatif")
PICTURES_DARK = ("leaderboard",)


def choose(page, label: str, option: str) -> None:
    """Pick an option of the Streamlit selectbox labelled `label`."""
    box = page.get_by_label(label, exact=True)
    if box.input_value() == option:  # chosen already (the page after a save keeps its choice)
        return
    box.click()
    box.fill(option)  # the selectbox filters its options as one types
    # click the option itself: Enter before the list has filtered picks whatever was first (on a busy machine)
    page.get_by_role("option", name=option, exact=True).first.click(timeout=PAGE_WAIT_MS)
    settle(page)


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_real_data_pages_in_both_themes(served, browser, theme):
    base, folder = served
    shots = folder / f"screenshots-{theme}"
    shots.mkdir(exist_ok=True)
    context = browser.new_context(viewport={"width": WIDTH, "height": 900}, color_scheme=theme)
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    clashes, seconds = {}, {}
    # a second, warm visit of every page (the server's caches; the theme is the browser's alone: once)
    for visit in ("first", "warm") if theme == "light" else ("first",):
        for path, name, ready_text in REAL_PAGES:
            started = time.monotonic()
            open_page(page, base, path, ready_text)
            seconds[(name, visit)] = time.monotonic() - started
            if visit == "warm":
                continue
            snap(page, shots / f"{name}-{theme}.png")  # what a 1400x900 window shows first
            for _, text, part in (v for v in SCROLLED if v[0] == name):
                if SCREENSHOTS:
                    scroll_to(page, text)
                    snap(page, shots / f"{part}-{theme}.png")
                else:  # the part is on the page
                    assert locate(page, text).count() >= 1, (name, text)
            screenshot(page, shots / f"{name}.png", keep_size=True)  # the whole page: every chart drawn
            if name in ("overview", "leaderboard", "checkpoints", "checkpoints-specbundle", "whatif"):
                page.locator('[data-testid="stPlotlyChart"] svg.main-svg').first.wait_for(
                    timeout=PAGE_WAIT_MS
                )
            clashes[name] = legend_clashes(page)
            if name == "overview":  # the Deploy view, its first table: the columns read whole
                clashes[name] += page.evaluate(CELLS_CUT, [0, {c: DEPLOY_COLUMN_PX[c] for c in READ_WHOLE}])
            if name == "whatif":
                clashes[name] += page.evaluate(ANNOTATIONS_OUTSIDE)
            page.set_viewport_size({"width": WIDTH, "height": 900})
    print(f"\npage seconds ({theme}):", {f"{n} {v}": round(t, 2) for (n, v), t in seconds.items()})
    assert not any(clashes.values()), clashes

    if theme == "light":  # what the server does, whatever the theme
        server_side_checks(page, base)
        profile_edit(page, base, shots)
    context.close()
    assert not errors, errors
    copy_screenshots(shots, theme)


def server_side_checks(page, base: str) -> None:
    # What-if on a drafter without training metrics: measured-derived acceptance, no KeyError
    open_page(page, base, f"whatif?run={quote(SB_DRAFTER)}", "Best at")
    assert page.get_by_text("Measured-derived acceptance").count() == 1
    # the Leaderboard's overlay link opens the Checkpoints page on that entry
    open_page(page, base, f"leaderboard?deployment={quote(SB_DEPLOYMENT)}", "Select a row to open it")
    page.get_by_role("link", name="Overlay: predicted vs measured on the Checkpoints page").click()
    page.get_by_text("Acceptance per draft position").wait_for(timeout=PAGE_WAIT_MS)
    settle(page)
    assert "checkpoints?" in page.url and "setting=EAGLE3" in page.url
    assert page.locator('[data-testid="stException"]').count() == 0


def profile_edit(page, base: str, shots: Path) -> None:
    """A profile edit keeps what was not edited (the blank form wiped it)."""
    open_page(page, base, "settings", "Deployment profiles")
    choose(page, "Edit", PCIE)
    one_profile_form(page)
    gpu = page.get_by_label("GPU", exact=True)
    expect(gpu).to_have_value("RTX PRO 6000 Blackwell", timeout=PAGE_WAIT_MS)
    overhead = page.get_by_label("Overhead ms per round", exact=True)
    overhead.fill("1.5")
    page.get_by_role("button", name="Save profile").click()
    settle(page)
    assert page.locator('[data-testid="stException"]').count() == 0
    choose(page, "Edit", PCIE)
    one_profile_form(page)
    expect(page.get_by_label("GPU", exact=True)).to_have_value("RTX PRO 6000 Blackwell", timeout=PAGE_WAIT_MS)
    expect(page.get_by_label("Overhead ms per round", exact=True)).to_have_value("1.50", timeout=PAGE_WAIT_MS)
    screenshot(page, shots / "settings-edited.png")


def one_profile_form(page) -> None:
    """The chosen profile's form alone: each profile's form has widgets of its own, and the one shown before
    the choice can linger a moment on a busy machine."""
    expect(page.get_by_label("GPU", exact=True)).to_have_count(1, timeout=PAGE_WAIT_MS)


def copy_screenshots(shots: Path, theme: str) -> None:
    """With SPECDASH_SCREENSHOTS=DIR: the pictures of the README and docs/, and every page to DIR/img."""
    target = SCREENSHOTS
    if target:
        Path(target, "img").mkdir(parents=True, exist_ok=True)
        # every page as a 1400x900 window shows it, and the parts further down, in this theme
        for name in [n for _, n, _ in REAL_PAGES] + [part for *_, part in SCROLLED]:
            shutil.copy(shots / f"{name}-{theme}.png", Path(target) / "img" / f"{name}-{theme}.png")
        for name in PICTURES if theme == "light" else PICTURES_DARK:
            shutil.copy(
                shots / f"{name}.png", Path(target) / f"{name}{'' if theme == 'light' else '-dark'}.png"
            )


# last: it writes to the shared store (a new benchmark and an alert's status)
def test_pages_upload_and_alert_in_chromium(served, browser):
    base, folder = served
    shots = folder / "screenshots"
    shots.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": WIDTH, "height": 900})
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))

    # (every page of this store has rendered in both themes, test_real_data_pages_in_both_themes)
    # upload through the page's own file input, save, and follow the link to the new alert
    open_page(page, base, "upload", "Benchmark results, training logs")
    page.locator('[data-testid="stFileUploader"] input[type="file"]').set_input_files(str(UPLOAD))
    page.get_by_text("Valid: ready to save.").wait_for(timeout=PAGE_WAIT_MS)
    page.get_by_role("button", name="Save 1 file(s)").click()
    page.get_by_text("deep_rerun.json: 1 record(s) as specdash").wait_for(timeout=PAGE_WAIT_MS)
    settle(page)
    screenshot(page, shots / "upload-saved.png")
    link = page.get_by_role(
        "link", name=re.compile(r"^Alert #\d+ \(warning\): k25-eagle3-100k-ttt5 \x2f epoch_5")
    )
    alert = int(re.search(r"#(\d+)", link.inner_text()).group(1))
    link.click()
    page.get_by_text(f"Alert #{alert}: k25-eagle3-100k-ttt5 / epoch_5").wait_for(timeout=PAGE_WAIT_MS)
    settle(page)
    assert f"alert={alert}" in page.url
    cells = page.locator('[data-testid="stDataFrame"] [role="gridcell"]').all_inner_texts()
    assert "EAGLE3 11/1/12" in cells, cells
    assert page.get_by_text("positions 6..11 are extrapolated").count() == 1
    screenshot(page, shots / "alerts-new.png")

    # live: a status change written by another process shows on the open page, without a reload
    with transaction(make_engine(f"sqlite:///{folder / 'specdash.db'}")) as session:
        change_status(session, alert, "explained", "cli", "deep rerun checked from the terminal")
    page.get_by_text("Current note: deep rerun checked from the terminal").wait_for(timeout=PAGE_WAIT_MS)
    assert f"alert={alert}" in page.url  # the same page, rerun by its store watcher

    assert not errors, errors
