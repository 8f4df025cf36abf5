"""Team mode: `specdash serve --read-only` changes nothing; writers named by a trusted reverse-proxy header
(typed names refused), recorded in the alert's history; failures shown with an error id, not a traceback."""

from types import SimpleNamespace

import pytest
from click.testing import CliRunner
from sqlalchemy import make_url, select, text

from specdash.app import identity
from specdash.app.text import unmd
from specdash.cli import serve_command
from specdash.cli.main import cli
from specdash.db.engine import make_engine, reading, transaction
from specdash.db.models import AlertEvent, Change, IngestedFile
from tests.app_support import run_page
from tests.ingest_support import content

STORY_GAP = 3  # the story's alert (the EAGLE-flag benchmark against theory)


def served(monkeypatch, *args: str) -> tuple[dict, list[str], str]:
    launched = []
    monkeypatch.setattr(serve_command, "open_db", lambda ctx: SimpleNamespace(url=make_url("sqlite:///x.db")))
    monkeypatch.setattr(serve_command.os, "execve", lambda exe, command, env: launched.append((env, command)))
    result = CliRunner().invoke(cli, ["--db", "sqlite:///x.db", "serve", *args])
    assert result.exit_code == 0, result.output
    return launched[0][0], launched[0][1], result.output


def test_serve_read_only_and_user_header_reach_the_dashboard(monkeypatch):
    env, command, output = served(monkeypatch, "--read-only")
    assert env["SPECDASH_READ_ONLY"] == "1" and env["SPECDASH_USER_HEADER"] == ""
    assert "read-only" in output
    assert command[command.index("--client.showErrorDetails") + 1] == "none"
    env, _, output = served(monkeypatch, "--user-header", "X-Forwarded-User")
    assert env["SPECDASH_READ_ONLY"] == "" and env["SPECDASH_USER_HEADER"] == "X-Forwarded-User"
    assert "writers named by X-Forwarded-User" in output


def test_a_read_only_engine_is_refused_every_write_by_the_database(demo_url):
    engine = make_engine(demo_url, read_only=True)
    before = content(make_engine(demo_url))
    with pytest.raises(Exception, match="readonly|read-only"):
        with transaction(engine) as session:
            session.execute(text("UPDATE gap SET status = 'dismissed'"))
    assert content(make_engine(demo_url)) == before


def test_read_only_dashboard_saves_nothing(monkeypatch, demo_url):
    monkeypatch.setenv("SPECDASH_READ_ONLY", "1")
    before = content(make_engine(demo_url))
    at = run_page(monkeypatch, demo_url, "views/alerts.py", {"alert": str(STORY_GAP)})
    at.text_input(key="alerts_who").input("mallory")
    at.selectbox(key=f"alerts_new_status_{STORY_GAP}").select("dismissed")
    next(b for b in at.button if b.label == "Save status").click().run()
    assert not at.exception
    assert identity.READ_ONLY_MESSAGE in [w.value for w in at.warning]
    upload = run_page(monkeypatch, demo_url, "views/upload.py")
    assert not upload.file_uploader and upload.info[0].value.startswith(identity.READ_ONLY_MESSAGE)
    assert content(make_engine(demo_url)) == before


@pytest.fixture
def proxy(monkeypatch):
    """A reverse proxy that signs users in and passes the name in X-Forwarded-User."""
    monkeypatch.setenv("SPECDASH_USER_HEADER", "X-Forwarded-User")
    headers: dict[str, str] = {}
    monkeypatch.setattr(identity, "_headers", lambda: headers)
    return headers


def test_the_proxy_header_names_the_writer_in_the_history(monkeypatch, demo_url, proxy):
    proxy["x-forwarded-user"] = "ana@example.com"
    at = run_page(monkeypatch, demo_url, "views/alerts.py", {"alert": str(STORY_GAP)})
    assert not [t for t in at.text_input if t.key == "alerts_who"]  # no name to type
    assert any(unmd(c.value).startswith("Signed in as **ana@example.com**") for c in at.caption)
    at.selectbox(key=f"alerts_new_status_{STORY_GAP}").select("explained")
    next(b for b in at.button if b.label == "Save status").click().run()
    assert not at.exception
    with reading(make_engine(demo_url)) as session:
        event = session.scalars(select(AlertEvent)).one()
    assert (event.who, event.to_status) == ("ana@example.com", "explained")


def test_without_the_header_a_write_is_refused(monkeypatch, demo_url, proxy):
    before = content(make_engine(demo_url))
    at = run_page(monkeypatch, demo_url, "views/alerts.py", {"alert": str(STORY_GAP)})
    assert any("did not come with the request" in w.value for w in at.warning)
    at.selectbox(key=f"alerts_new_status_{STORY_GAP}").select("dismissed")
    next(b for b in at.button if b.label == "Save status").click().run()
    assert content(make_engine(demo_url)) == before


def test_a_failing_save_shows_an_error_id_not_a_traceback(monkeypatch, db_url, caplog):
    from specdash.app import errors

    at = run_page(monkeypatch, db_url, "views/upload.py")
    at.file_uploader[0].set_value(("run.jsonl", b'{"kind": "run", "name": "r"}\n', "application/json")).run()
    path = db_url.removeprefix("sqlite:///")
    # the store turns read-only between the check and the save
    monkeypatch.setenv("SPECDASH_DB_URL", f"sqlite:///file:{path}?mode=ro&uri=true")
    with caplog.at_level("ERROR", logger=errors.LOG.name):
        at.button(key="upload_save").click().run()
    assert not at.exception
    shown = [e.value for e in at.error if "Error id" in e.value]
    assert shown and "read\\-only" in shown[0] and "Traceback" not in shown[0]
    error_id = shown[0].split("Error id `")[1].split("`")[0]
    assert any(error_id in r.getMessage() and r.exc_info for r in caplog.records)


def save_upload(monkeypatch, url):
    """The Upload page after a one-run file was chosen and saved."""
    upload = run_page(monkeypatch, url, "views/upload.py")
    upload.file_uploader[0].set_value(
        ("run.jsonl", b'{"kind": "run", "name": "r"}\n', "application/json")
    ).run()
    upload.button(key="upload_save").click().run()
    assert not upload.exception
    return upload


def test_settings_and_uploads_record_the_signed_in_writer(monkeypatch, demo_url, proxy):
    proxy["x-forwarded-user"] = "ana@example.com"
    at = run_page(monkeypatch, demo_url, "views/settings.py")
    at.number_input(key="settings_threshold").set_value(25.0)
    next(b for b in at.button if b.label == "Save global threshold").click().run()
    assert not at.exception
    save_upload(monkeypatch, demo_url)
    with reading(make_engine(demo_url)) as session:
        change = session.scalars(select(Change)).one()
        uploaded = session.scalars(select(IngestedFile).where(IngestedFile.path == "run.jsonl")).one()
    assert (change.who, change.kind, change.field, change.new_value) == (
        "ana@example.com",
        "setting",
        "gap_threshold",
        0.25,
    )
    assert change.old_value == pytest.approx(0.10)  # the demo's global threshold before
    assert uploaded.ingested_by == "ana@example.com"
    # the Settings page lists it
    at = run_page(monkeypatch, demo_url, "views/settings.py")
    [history] = [d.value for d in at.dataframe if "who" in d.value.columns]
    assert history.iloc[0][["who", "subject", "field"]].tolist() == [
        "ana@example.com",
        "global",
        "gap_threshold",
    ]


def test_without_the_header_an_upload_does_nothing(monkeypatch, demo_url, proxy):
    """Not even the dry run (which takes the write lock): the page offers no file to choose."""
    previews = []
    monkeypatch.setattr("specdash.app.state.preview_ingest", lambda *a, **k: previews.append(a))
    before = content(make_engine(demo_url))
    upload = run_page(monkeypatch, demo_url, "views/upload.py")
    assert not upload.exception and not upload.file_uploader
    assert [i.value for i in upload.info] == ["Uploading needs a signed-in user."]
    assert any("did not come with the request" in w.value for w in upload.warning)
    assert previews == [] and content(make_engine(demo_url)) == before


@pytest.mark.parametrize(
    "args,message",
    [
        (
            ["--host", "0.0.0.0", "--user-header", "X-Forwarded-User"],
            "--user-header on --host 0.0.0.0 would trust a header any client reaching the port can send",
        ),
        (["--trusted-proxy", "10.0.0.5"], "--trusted-proxy and --proxy-secret-header guard --user-header"),
        (
            ["--user-header", "X-U", "--trusted-proxy", "proxy.lan"],
            "'proxy.lan' is not an address or network",
        ),
        (
            ["--user-header", "X-U", "--proxy-secret-header", "X-Proxy-Secret"],
            "needs the secret in $SPECDASH_PROXY_SECRET",
        ),
    ],
)
def test_serve_refuses_a_user_header_anyone_could_send(monkeypatch, args, message):
    monkeypatch.delenv("SPECDASH_PROXY_SECRET", raising=False)
    monkeypatch.setattr(serve_command.os, "execve", lambda *a: pytest.fail("the server started"))
    result = CliRunner().invoke(cli, ["--db", "sqlite:///x.db", "serve", *args])
    assert result.exit_code == 2 and message in result.output


def test_serve_passes_the_guard_to_the_dashboard(monkeypatch):
    env, _, output = served(
        monkeypatch, "--host", "0.0.0.0", "--user-header", "X-Forwarded-User", "--trusted-proxy", "10.0.0.5",
        "--trusted-proxy", "10.1.0.0/16",
    )  # fmt: skip
    assert env["SPECDASH_TRUSTED_PROXIES"] == "10.0.0.5/32,10.1.0.0/16"
    assert "writers named by X-Forwarded-User from 10.0.0.5/32, 10.1.0.0/16" in output
    monkeypatch.setenv("SPECDASH_PROXY_SECRET", "s3cret")
    env, command, output = served(
        monkeypatch, "--host", "0.0.0.0", "--user-header", "X-U", "--proxy-secret-header", "X-Proxy-Secret"
    )
    assert env["SPECDASH_PROXY_SECRET_HEADER"] == "X-Proxy-Secret" and env["SPECDASH_TRUSTED_PROXIES"] == ""
    assert "s3cret" not in " ".join(command) and "s3cret" not in output


def save_threshold(monkeypatch, url, value):
    at = run_page(monkeypatch, url, "views/settings.py")
    at.number_input(key="settings_threshold").set_value(value)
    next(b for b in at.button if b.label == "Save global threshold").click().run()
    assert not at.exception
    return at


@pytest.mark.parametrize(
    "peer,trusted,secret,saved",
    [
        ("203.0.113.9", "", "", False),  # a client reaching the port directly, loopback the only proxy
        ("203.0.113.9", "10.0.0.5", "", False),
        ("10.0.0.5", "10.0.0.5", "", True),
        ("10.1.2.3", "10.0.0.5,10.1.0.0/16", "", True),
        ("127.0.0.1", "", "", True),  # the default: a proxy on this host
        ("127.0.0.1", "10.0.0.5", "", False),
        ("203.0.113.9", "", "s3cret", True),
        ("203.0.113.9", "", "wrong", False),
    ],
)
def test_the_user_header_counts_only_through_the_trusted_proxy(
    monkeypatch, demo_url, proxy, peer, trusted, secret, saved
):
    monkeypatch.setattr(identity, "_peer", lambda: peer)
    monkeypatch.setenv("SPECDASH_TRUSTED_PROXIES", trusted)
    if secret:
        monkeypatch.setenv("SPECDASH_PROXY_SECRET_HEADER", "X-Proxy-Secret")
        monkeypatch.setenv("SPECDASH_PROXY_SECRET", "s3cret")
        proxy["x-proxy-secret"] = secret
    proxy["x-forwarded-user"] = "mallory@example.com"
    at = save_threshold(monkeypatch, demo_url, 50.0)
    with reading(make_engine(demo_url)) as session:
        changes = session.scalars(select(Change)).all()
    if saved:
        assert [(c.who, c.field, c.new_value) for c in changes] == [
            ("mallory@example.com", "gap_threshold", 0.5)
        ]
    else:
        assert changes == []
        assert any("need a signed-in user" in w.value for w in at.warning)
