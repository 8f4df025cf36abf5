"""How benchmarks find their checkpoint and deployment: names, drafter paths, folder names, options."""

import json

import pytest

from specdash.ingest.formats import FORMATS
from specdash.ingest.links import LinkOptions, name_from_path, parse_checkpoint_name
from specdash.ingest.pipeline import ingest
from specdash.ingest.policy import IngestPolicy
from specdash.ingest.sources import UploadSource
from specdash.ingest.trackers import readers
from tests.ingest_support import SGLANG


@pytest.mark.parametrize(
    "name,epoch,step,run",
    [
        ("epoch_2", 2, None, None),
        ("epoch_2_step_24000", 2, 24000, None),
        ("epoch_1_global_step_900", 1, 900, None),
        ("checkpoint-1500", None, 1500, None),
        ("step_300", None, 300, None),
        ("run7-step1500", None, 1500, "run7"),
    ],
)
def test_checkpoint_folder_names(name, epoch, step, run):
    parsed = parse_checkpoint_name(name)
    assert (parsed.epoch, parsed.step, parsed.run) == (epoch, step, run)


@pytest.mark.parametrize("name", ["final", "llama-eagle3", "epoch", "v2"])
def test_names_that_are_not_checkpoints(name):
    assert parse_checkpoint_name(name) is None


@pytest.mark.parametrize(
    "path,run,checkpoint",
    [
        ("/ckpt/run7/epoch_2_step_24000", "run7", "epoch_2_step_24000"),
        ("/out/run7-step1500/", "run7", "run7-step1500"),
        ("lmsys/sglang-EAGLE3-LLaMA3.1-Instruct-8B", "lmsys/sglang-EAGLE3-LLaMA3.1-Instruct-8B", "published"),
        ("/ckpt/qwen3-eagle/final", "qwen3-eagle", "final"),
        ("/models/my-drafter", "my-drafter", "final"),
        ("C:\\ckpt\\run7\\epoch_3", "run7", "epoch_3"),
        ("../../etc/passwd", "passwd", "final"),  # a name, never a path that is opened
    ],
)
def test_run_and_checkpoint_named_by_a_drafter_path(path, run, checkpoint):
    derived = name_from_path(path)
    assert (derived.run, derived.checkpoint) == (run, checkpoint)


def document(*benchmarks) -> bytes:
    return json.dumps(
        {
            "specdash": 1,
            "checkpoints": [
                {"run": "run7", "name": "epoch_3", "path": "/mnt/a/epoch_3"},
                {"run": "run8", "name": "epoch_3"},
                {"run": "run9", "name": "run9-step100"},
                {"run": "org/drafter-x", "name": "published"},
            ],
            "benchmarks": [
                {
                    "deployment": "d",
                    "speculative_algorithm": "EAGLE3",
                    "decode_tps": 100.0 + i,
                    "drafter_path": path,
                }
                for i, path in enumerate(benchmarks)
            ],
        }
    ).encode()


@pytest.mark.parametrize(
    "drafter_path,link,expected",
    [
        ("/mnt/a/epoch_3", None, ("run7", "epoch_3", "by path")),
        ("/elsewhere/run8/epoch_3", None, ("run8", "epoch_3", "by folder names")),
        ("/other/run9-step100", None, ("run9", "run9-step100", "by folder names")),
        ("/x/y/epoch_3", None, ("y", "epoch_3", "created from path")),  # epoch_3 alone is ambiguous
        ("org/drafter-x", None, ("org/drafter-x", "published", "by folder names")),  # a hub id seen before
        ("org/drafter-y", None, ("org/drafter-y", "published", "created from path")),
        ("/mnt/a/epoch_3", LinkOptions(run="run8"), ("run8", "epoch_3", "by folder names")),
        ("/mnt/a/epoch_3", LinkOptions(run="run9", checkpoint="late"), ("run9", "late", "by name")),
    ],
)
def test_link_order(engine, drafter_path, link, expected):
    result = ingest(engine, UploadSource("doc.json", document(drafter_path)), IngestPolicy(link=link))
    assert result.status == "loaded", [str(p) for p in result.problems]
    (found,) = result.store.links
    assert (found.run, found.checkpoint, found.how) == expected


def test_a_checkpoint_name_alone_must_be_unique(engine):
    result = ingest(
        engine,
        UploadSource("doc.json", document("/mnt/a/epoch_3")),
        IngestPolicy(link=LinkOptions(checkpoint="epoch_3")),
    )
    assert result.status == "failed"
    assert [str(p) for p in result.problems] == [
        "doc.json:1: run: checkpoint 'epoch_3' needs a run to link to"
    ]


def test_cli_options_and_summary(invoke, db_url):
    result = invoke(
        db_url,
        "ingest",
        "--run",
        "run7",
        "--checkpoint",
        "epoch_3",
        "--deployment",
        "H100 box",
        str(SGLANG / "bench_serving_0.5.23.jsonl"),
    )
    assert result.exit_code == 0, result.output
    assert "benchmarks: run7/epoch_3 by name (1)" in result.output
    assert "created 1 benchmark(s), 1 checkpoint(s), 1 deployment(s), 1 run(s)" in result.output


def test_several_files_end_with_a_summary(invoke, db_url):
    files = [str(SGLANG / name) for name in ("bench_serving_0.5.23.jsonl", "server_0.5.2.log")]
    result = invoke(db_url, "ingest", *files, files[0])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[-1] == (
        "3 file(s): 2 loaded, 1 skipped, 0 failed; 2 record(s); created 2 benchmark(s), 1 checkpoint(s), "
        "2 deployment(s), 1 run(s); 2 benchmark(s) linked, 0 not linked; 0 duplicate(s) skipped; 0 new alert(s)."
    )


def test_formats_lists_every_format(invoke):
    output = invoke(None, "formats").output
    # the file formats, then the path readers (tracker stores, SpecForge configs and output folders)
    names = [f.name for f in FORMATS] + [r.name for r in readers()]
    assert [line.split()[0] for line in output.splitlines()] == names
    assert "specforge-output" in names
    assert {
        "sglang-bench-serving",
        "sglang-one-batch",
        "sglang-offline",
        "sglang-log",
        "vllm-bench-serve",
        "vllm-log",
        "specforge-log",
        "tracker-csv",
        "tracker-json",
        "specforge-bench-eagle3",
        "specforge-benchmark",
        "specbundle",
        "specdash",
        "specdash-csv",
        "speculators-log",
        "specforge-model-speedup",
        "sglang-one-batch-offline",
        "guidellm",
        "guidellm-console",
        "serving-console",
    } == {f.name for f in FORMATS}


def test_the_manual_documents_every_format_and_command():
    from specdash.cli.main import COMMANDS
    from tests.conftest import REPO

    formats_page = (REPO / "docs" / "formats.md").read_text()
    native_page = (REPO / "docs" / "native-format.md").read_text()
    for fmt in FORMATS:
        # the native formats have their own page
        page = native_page if fmt.name in ("specdash", "specdash-csv") else formats_page
        assert f"`{fmt.name}`" in page, fmt.name
    # the hand-written table of docs/cli.md, above the generated --help of each command
    commands_table = (REPO / "docs" / "cli.md").read_text().split("<!-- cli-reference -->", 1)[0]
    assert COMMANDS
    for command in COMMANDS:
        assert f"`specdash {command}" in commands_table, command
