"""Secrets never leave the server: a database password in either URL form (`user:pw@`, `?password=`) and a
webhook's token are masked in the sidebar of every page, the `serve` banner, `init`'s output, connection
errors, the server log and the change history; Settings' webhook field is write-only; a database URL
specdash cannot use is one line, not a traceback."""

import logging
import warnings
from types import SimpleNamespace

import pytest
from click.testing import CliRunner
from sqlalchemy import make_url, select

from specdash.app import errors
from specdash.app.text import unmd
from specdash.cli import serve_command
from specdash.cli.main import cli
from specdash.db.engine import make_engine, reading, transaction
from specdash.db.models import Change
from specdash.masking import masked_url, masked_webhook, scrubbed
from specdash.notify import get_webhook_url, set_webhook_url
from tests.app_support import run_page

SECRET = "hunter2"
TOKEN = "T0123/B0456/tok3nXYZsecret"
HOOK = f"https://hooks.slack.com/services/{TOKEN}"
PAGES = [
    "views/overview.py",
    "views/leaderboard.py",
    "views/runs.py",
    "views/checkpoints.py",
    "views/alerts.py",
    "views/whatif.py",
    "views/live.py",
    "views/upload.py",
    "views/settings.py",
]


@pytest.mark.parametrize(
    "url,shown",
    [
        (f"postgresql://ana:{SECRET}@db:5432/specdash", "postgresql://ana:***@db:5432/specdash"),
        (f"postgresql://ana@db/specdash?password={SECRET}", "postgresql://ana@db/specdash?password=***"),
        (
            f"postgresql+psycopg://ana@db/s?sslmode=require&PassWord={SECRET}&x=1",
            "postgresql+psycopg://ana@db/s?sslmode=require&PassWord=***&x=1",
        ),
        (f"postgresql://ana:p%40{SECRET}@db/s?password={SECRET}", "postgresql://ana:***@db/s?password=***"),
        ("sqlite:///specdash.db", "sqlite:///specdash.db"),
    ],
)
def test_a_database_url_is_shown_without_its_password(url, shown):
    assert masked_url(url) == shown
    error = scrubbed(f"failed for {url}: FATAL {SECRET}", url)
    assert error == f"failed for {shown}: FATAL " + ("***" if SECRET in url else SECRET)


def test_a_password_holding_an_unencoded_at_sign_is_masked_whole():
    url = f"postgresql://ana:p@{SECRET}@db/s"
    assert masked_url(url) == "postgresql://ana:***@db/s"
    assert (
        scrubbed(f"{url}: password p@{SECRET} refused", url)
        == "postgresql://ana:***@db/s: password *** refused"
    )


@pytest.mark.parametrize(
    "url,shown",
    [
        (HOOK, "https://hooks.slack.com/***"),
        ("http://127.0.0.1:9/hook?token=abc", "http://127.0.0.1:9/***"),
        (f"https://bot:{SECRET}@chat.example/x", "https://bot:***@chat.example/***"),
    ],
)
def test_a_webhook_is_shown_as_its_host(url, shown):
    assert masked_webhook(url) == shown


def with_password(url: str) -> str:
    return f"{url}?password={SECRET}"


def quietly(run):
    """SQLite ignores a password parameter and SQLAlchemy warns that it does: not what is tested here."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run()


def test_init_prints_no_password(tmp_path):
    url = with_password(f"sqlite:///{tmp_path / 'team.db'}")
    result = quietly(lambda: CliRunner().invoke(cli, ["--db", url, "init"], catch_exceptions=False))
    assert result.exit_code == 0, result.output
    assert SECRET not in result.output and "team.db?password=***: created at schema revision" in result.output


def test_the_serve_banner_shows_no_password(monkeypatch):
    url = f"postgresql://ana@db/specdash?password={SECRET}"
    monkeypatch.setattr(serve_command, "open_db", lambda ctx: SimpleNamespace(url=make_url(url)))
    monkeypatch.setattr(serve_command.os, "execve", lambda *args: None)
    result = CliRunner().invoke(cli, ["--db", url, "serve"])
    assert result.exit_code == 0, result.output
    assert (
        SECRET not in result.output and "database postgresql://ana@db/specdash?password=***" in result.output
    )


@pytest.mark.parametrize(
    "url",
    [f"postgresql://ana@127.0.0.1:1/specdash?password={SECRET}", f"postgresql://ana:{SECRET}@127.0.0.1:1/s"],
)
def test_a_connection_error_shows_no_password(url):
    result = CliRunner().invoke(cli, ["--db", url, "gaps"])
    assert result.exit_code == 1
    assert "cannot connect to PostgreSQL at postgresql://ana" in result.output
    assert SECRET not in result.output and "Traceback" not in result.output


@pytest.mark.parametrize(
    "url,message",
    [
        (
            f"mysql://ana:{SECRET}@db/s",
            "mysql://ana:***@db/s: 'mysql' databases are not supported: give --db",
        ),
        ("notaurl://x", "notaurl://x: 'notaurl' databases are not supported: give --db"),
        ("not a url at all", "not a url at all is not a database URL: give --db"),
        (f"postgresql://ana:{SECRET}@db:port/s", "postgresql://ana:***@db:port/s: the port is not a number"),
        ("sqlite://ana@//tmp/x.db", "Invalid SQLite URL: sqlite://ana@//tmp/x.db: give --db"),
    ],
)
def test_a_database_url_specdash_cannot_use_is_one_line(url, message):
    result = CliRunner().invoke(cli, ["--db", url, "init"])
    assert result.exit_code == 1 and result.exception is None or isinstance(result.exception, SystemExit)
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"Error: {message}"), result.output
    assert SECRET not in result.output


@pytest.mark.parametrize("page", PAGES)
def test_no_page_shows_the_database_password(monkeypatch, demo_url, page):
    at = quietly(lambda: run_page(monkeypatch, with_password(demo_url), page))
    assert not at.exception
    captions = [c.value for c in at.sidebar.caption]
    assert any("password=\\*\\*\\*" in c or "password=***" in c for c in captions), captions
    assert SECRET not in repr(at._tree)


def test_the_log_holds_no_password(monkeypatch, caplog):
    monkeypatch.setenv("SPECDASH_DB_URL", f"postgresql://ana@db/s?password={SECRET}")
    with caplog.at_level("ERROR", logger=errors.LOG.name):
        try:
            raise RuntimeError(f"connect failed for postgresql://ana@db/s?password={SECRET}")
        except RuntimeError as exc:
            errors.LOG.error("error %s while %s", "id1", f"saving with {SECRET}", exc_info=exc)
    handler = logging.StreamHandler()
    written = [handler.format(r) for r in caplog.records]
    assert written and all(SECRET not in text for text in written)
    assert "password=***" in written[0]


def test_settings_never_shows_the_saved_webhook_and_keeps_it_when_left_empty(monkeypatch, demo_url):
    with transaction(make_engine(demo_url)) as session:
        set_webhook_url(session, HOOK)
    at = run_page(monkeypatch, demo_url, "views/settings.py")
    assert not at.exception
    field = at.text_input(key="settings_webhook_url")
    assert field.value == "" and "(saved: https://hooks.slack.com/***;" in unmd(field.label)
    assert TOKEN not in repr(at._tree)
    next(b for b in at.button if b.label == "Save").click().run()  # the field left empty
    with reading(make_engine(demo_url)) as session:
        assert get_webhook_url(session) == HOOK
    at.text_input(key="settings_webhook_url").input("https://chat.example/hook/NEWTOKEN")
    next(b for b in at.button if b.label == "Save").click().run()
    assert not at.exception
    with reading(make_engine(demo_url)) as session:
        assert get_webhook_url(session) == "https://chat.example/hook/NEWTOKEN"
        changes = session.scalars(
            select(Change).where(Change.field == "webhook_url").order_by(Change.id)
        ).all()
    # both changes in the history, masked, the page's writer named
    assert [(c.who, c.old_value, c.new_value) for c in changes] == [
        (changes[0].who, None, "https://hooks.slack.com/***"),
        ("dashboard", "https://hooks.slack.com/***", "https://chat.example/***"),
    ]
    assert not any(
        TOKEN in repr((c.old_value, c.new_value, c.note)) or "NEWTOKEN" in repr(c.new_value) for c in changes
    )
