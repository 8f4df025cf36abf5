"""Linking is exact before it is clever, and names runs as a person would."""

import json

import pytest

from specdash.ingest.describe import describe
from specdash.ingest.links import name_from_path
from specdash.ingest.pipeline import ingest
from specdash.ingest.sources import UploadSource


@pytest.mark.parametrize(
    "path,run,checkpoint",
    [
        ("/data/qwen3/checkpoints/checkpoint_best", "qwen3/checkpoints", "checkpoint_best"),
        (
            "/data/qwen3/checkpoints_compressed_vocab/checkpoint_best",
            "checkpoints_compressed_vocab",
            "checkpoint_best",
        ),
        ("/ckpt/llama-eagle3/4", "llama-eagle3", "4"),  # a numbered save of a run
        ("/ckpt/llama-eagle3/4/epoch_3", "llama-eagle3/4", "epoch_3"),  # never a bare "4"
        ("/mnt/output/run7/final", "run7", "final"),
        ("checkpoints/best_model", "checkpoints", "best_model"),  # nothing more to go on
        ("/home/me/exp/kimi-eagle3-ttt7/outputs/epoch_5", "kimi-eagle3-ttt7/outputs", "epoch_5"),
    ],
)
def test_run_names_a_person_recognises(path, run, checkpoint):
    derived = name_from_path(path)
    assert (derived.run, derived.checkpoint) == (run, checkpoint)


def document(paths, checkpoints=()) -> bytes:
    return json.dumps(
        {
            "specdash": 1,
            "checkpoints": list(checkpoints),
            "benchmarks": [
                {
                    "deployment": "d",
                    "speculative_algorithm": "EAGLE3",
                    "decode_tps": 100.0 + i,
                    "drafter_path": path,
                }
                for i, path in enumerate(paths)
            ],
        }
    ).encode()


def test_two_full_paths_are_two_drafters(engine):
    paths = [
        "/data/qwen3/checkpoints/checkpoint_best",
        "/data/qwen3/checkpoints_compressed_vocab/checkpoint_best",
    ]
    result = ingest(engine, UploadSource("doc.json", document(paths)))
    assert result.status == "loaded", [str(p) for p in result.problems]
    assert [(link.run, link.checkpoint, link.how) for link in result.store.links] == [
        ("qwen3/checkpoints", "checkpoint_best", "created from path"),
        ("checkpoints_compressed_vocab", "checkpoint_best", "created from path"),
    ]
    # the same two paths again, in another file: each finds its own checkpoint by its exact path
    again = ingest(engine, UploadSource("again.json", document(list(reversed(paths)))))
    assert [(link.run, link.how) for link in again.store.links] == [
        ("checkpoints_compressed_vocab", "by path"),
        ("qwen3/checkpoints", "by path"),
    ]
    assert "qwen3/checkpoints/checkpoint_best by path (1)" in describe(again)


def test_benchmarks_past_the_links_kept_are_counted_as_those_kept_are(engine, monkeypatch):
    """A file's first MAX_LINKS_KEPT benchmarks keep their links to be listed; every later one is counted
    by the same kind without one (a file of 300,000 builds 10,000 links)."""
    from specdash.ingest import benchmarks

    paths = ["/data/qwen3/checkpoints/checkpoint_best"] * 3 + [None, None]
    records = json.loads(document(paths))
    records["benchmarks"][3]["speculative_algorithm"] = None  # a baseline; the last, EAGLE3 with no drafter
    monkeypatch.setattr(benchmarks, "MAX_LINKS_KEPT", 2)
    result = ingest(engine, UploadSource("doc.json", json.dumps(records).encode()))
    assert result.status == "loaded", [str(p) for p in result.problems]
    assert len(result.store.links) == 2
    assert dict(result.store.link_counts) == {
        "qwen3/checkpoints/checkpoint_best created from path": 1,
        "qwen3/checkpoints/checkpoint_best by path": 2,
        "baseline": 1,
        "not linked": 1,
    }


def test_a_generic_parent_folder_is_not_a_run(engine):
    # run "checkpoints" holds checkpoint_best; another experiment's checkpoints/checkpoint_best is not it
    stored = [{"run": "checkpoints", "name": "checkpoint_best"}]
    result = ingest(
        engine, UploadSource("doc.json", document(["/y/other-exp/checkpoints/checkpoint_best"], stored))
    )
    (link,) = result.store.links
    assert (link.run, link.checkpoint, link.how) == (
        "other-exp/checkpoints",
        "checkpoint_best",
        "created from path",
    )


def test_a_folder_name_match_must_be_unambiguous(engine):
    # the same run and checkpoint folders under another root (a copy on the serving box): one candidate
    stored = [{"run": "run7", "name": "epoch_3", "path": "/train/run7/epoch_3"}]
    result = ingest(engine, UploadSource("doc.json", document(["/serve/run7/epoch_3"], stored)))
    (link,) = result.store.links
    assert (link.run, link.checkpoint, link.how) == ("run7", "epoch_3", "by folder names")
    # epoch_3 of a run named further up the path is found too, when it is the only one
    stored = [{"run": "kimi-ttt7", "name": "epoch_5"}]
    result = ingest(
        engine, UploadSource("doc2.json", document(["/x/kimi-ttt7/stage2/outputs/epoch_5"], stored))
    )
    (link,) = result.store.links
    assert (link.run, link.checkpoint, link.how) == ("kimi-ttt7", "epoch_5", "by folder names")
