"""Names that must resolve (ingest/rules/names.py): a prediction of something stored nowhere is refused; a
benchmark's name that only looks like a stored one is refused with "did you mean ...?" unless asked for as
new; a name unlike any stored one is created and the summary says so."""

import pytest

from specdash.ingest.describe import describe_new_names
from specdash.ingest.links import LinkOptions
from specdash.ingest.pipeline import ingest
from specdash.ingest.policy import IngestPolicy
from specdash.ingest.rules.names import name_key
from specdash.ingest.sources import UploadSource
from tests.ingest_support import content, native

PCIE = "8x RTX PRO 6000, TP8, PCIe"
BENCH = {"kind": "benchmark", "decode_tps": 95.0}
PREDICTION = {
    "kind": "prediction",
    "source": "sim-v2",
    "speculative_algorithm": "EAGLE3",
    "num_steps": 3,
    "run": "k25-eagle3",
    "checkpoint": "epoch_5",
    "deployment": PCIE,
    "predicted_tps": 150.0,
}
STORED = [
    {"kind": "deployment", "name": PCIE, "tp_size": 8, "interconnect": "pcie"},
    {"kind": "run", "name": "k25-eagle3-run0"},
    {"kind": "checkpoint", "run": "k25-eagle3-run0", "name": "epoch_1"},
]


@pytest.fixture
def stored(engine):
    assert ingest(engine, UploadSource("stored.jsonl", native(*STORED))).status == "loaded"
    return engine


@pytest.mark.parametrize(
    "a,b", [("PCle", "PCIe"), ("run0", "runO"), ("epoch_1", "epoch_l"), ("TP8, PCIe", "tp8,pcie")]
)
def test_look_alikes_share_a_key(a, b):
    assert name_key(a) == name_key(b)


def test_different_names_keep_different_keys():
    assert name_key("epoch_1") != name_key("epoch_2") and name_key("TP8") != name_key("TP4")


def test_a_prediction_of_nothing_stored_is_refused(stored):
    before = content(stored)
    record = {**PREDICTION, "deployment": "nowhere", "run": "ghost", "checkpoint": "epoch_9"}
    result = ingest(stored, UploadSource("predictions.jsonl", native(record)))
    assert result.status == "failed"
    assert [str(p) for p in result.problems] == [
        "predictions.jsonl:1: deployment: prediction 'sim-v2' names deployment 'nowhere', run 'ghost', "
        "checkpoint 'ghost/epoch_9', which neither this file nor the store holds (ingest the run, "
        "checkpoint and deployment first, or name stored ones)"
    ]
    assert content(stored) == before


def test_a_prediction_of_what_the_file_itself_holds_loads(stored):
    records = [
        {"kind": "run", "name": "k25-eagle3"},
        {"kind": "checkpoint", "run": "k25-eagle3", "name": "epoch_5"},
    ]
    result = ingest(stored, UploadSource("with_run.jsonl", native(*records, PREDICTION)))
    assert result.status == "loaded", [str(p) for p in result.problems]
    assert result.store is not None and result.store.created["prediction"] == 1


@pytest.mark.parametrize(
    "fields,field,typed,twin",
    [
        ({"deployment": "8x RTX PRO 6000, TP8, PCle"}, "deployment", "8x RTX PRO 6000, TP8, PCle", PCIE),
        ({"deployment": "8x rtx pro 6000,  TP8, PCIe"}, "deployment", "8x rtx pro 6000,  TP8, PCIe", PCIE),
        (
            {
                "deployment": PCIE,
                "speculative_algorithm": "EAGLE3",
                "run": "k25-eagle3-runO",
                "checkpoint": "epoch_1",
            },
            "run",
            "k25-eagle3-runO",
            "k25-eagle3-run0",
        ),
        (
            {
                "deployment": PCIE,
                "speculative_algorithm": "EAGLE3",
                "run": "k25-eagle3-run0",
                "checkpoint": "epoch_l",
            },
            "checkpoint",
            "epoch_l",
            "epoch_1",
        ),
    ],
)
def test_a_benchmark_name_that_only_looks_like_a_stored_one_is_refused(stored, fields, field, typed, twin):
    before = content(stored)
    data = native({**BENCH, **fields})
    result = ingest(stored, UploadSource("bench.jsonl", data))
    assert result.status == "failed"
    assert [str(p) for p in result.problems] == [
        f"bench.jsonl:1: {field}: {field} '{typed}' is stored nowhere; did you mean '{twin}'? (it differs only "
        "by case, spacing or look-alike characters; pass --new-names to create it as a new one)"
    ]
    assert content(stored) == before
    accepted = ingest(
        stored, UploadSource("bench.jsonl", data), IngestPolicy(link=LinkOptions(new_names=True))
    )
    assert accepted.status == "loaded" and accepted.store is not None
    assert f"{field} '{typed}'" in accepted.store.new_names


def test_a_name_unlike_any_stored_one_is_created_and_said(stored):
    result = ingest(stored, UploadSource("new.jsonl", native({**BENCH, "deployment": "1x H100, TP1"})))
    assert result.status == "loaded" and result.store is not None
    assert result.store.created["deployment"] == 1
    assert describe_new_names(result) == "  new name(s), unlike any stored: deployment '1x H100, TP1'"


def test_the_cli_takes_new_names_on_purpose(stored, db_url, tmp_path, invoke):
    path = tmp_path / "bench.jsonl"
    path.write_bytes(native({**BENCH, "deployment": "8x RTX PRO 6000, TP8, PCle"}))
    refused = invoke(db_url, "ingest", str(path))
    assert refused.exit_code == 1 and "did you mean '8x RTX PRO 6000, TP8, PCIe'?" in refused.output
    taken = invoke(db_url, "ingest", "--new-names", str(path))
    assert taken.exit_code == 0, taken.output
    assert "new name(s), unlike any stored: deployment '8x RTX PRO 6000, TP8, PCle'" in taken.output


def test_a_new_name_shared_by_several_runs_is_said_once(stored):
    """SpecBundle names every drafter's checkpoint 'published': fifteen runs, one name worth a look."""
    runs = [{"kind": "run", "name": f"drafter-{i}"} for i in range(3)]
    benches = [
        {**BENCH, "deployment": PCIE, "run": f"drafter-{i}", "checkpoint": "published"} for i in range(3)
    ]
    result = ingest(stored, UploadSource("three.jsonl", native(*runs, *benches)))
    assert result.status == "loaded" and result.store is not None
    assert result.store.new_names.count("checkpoint 'published'") == 1
