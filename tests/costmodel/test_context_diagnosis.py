"""context_mix: a benchmark decoded at a context far from its deployment's others is judged against a
prediction for their median; the diagnosis names both contexts, only when the gap points the way a KV read
would (longer and slower, shorter and faster)."""

import json

from specdash.app.alert_text import cause_phrase
from specdash.costmodel.diagnoses import GapContext, context_mix
from specdash.costmodel.gaps import GapDecomposition
from tests.conftest import FIXTURES


def gap(measured: float, predicted: float) -> GapDecomposition:
    return GapDecomposition(
        measured_tps=measured,
        predicted_tps=predicted,
        gap=1 - measured / predicted,
        measured_round_ms=1500 / measured,
        predicted_round_ms=1500 / predicted,
        acceptance_factor=1.0,
        round_factor=measured / predicted,
        unexplained_ms=1500 / measured - 1500 / predicted,
        measured_accept_length=1.5,
        predicted_accept_length=1.5,
    )


def test_a_long_context_measured_slower_names_both_contexts():
    found = context_mix(GapContext(gap(12.55, 40.0), context_tokens=16512, reference_context=8832))
    assert found is not None and found.severity == "info"
    assert "16,512 tokens, longer than the 8,832" in found.message
    assert (
        cause_phrase(found.code, found.message)
        == "it ran at 16,512 tokens of context, the prediction is for 8,832"
    )


def test_only_where_the_gap_points_the_way_the_kv_read_does():
    # longer and faster, a context within 25 % of the median, no median, a gap under the threshold: nothing
    assert context_mix(GapContext(gap(50.0, 40.0), context_tokens=16512, reference_context=8832)) is None
    assert context_mix(GapContext(gap(12.55, 40.0), context_tokens=9000, reference_context=8832)) is None
    assert context_mix(GapContext(gap(12.55, 40.0), context_tokens=16512)) is None
    assert context_mix(GapContext(gap(39.0, 40.0), context_tokens=16512, reference_context=8832)) is None
    shorter = context_mix(GapContext(gap(70.6, 40.0), context_tokens=1152, reference_context=8832))
    assert shorter is not None and "shorter" in shorter.message and "faster" in shorter.message


def test_the_two_prompt_length_sweep_gets_it_on_its_long_benchmarks(invoke, db_url):
    assert invoke(db_url, "ingest", str(FIXTURES / "native" / "context_sweep.jsonl")).exit_code == 0
    gaps = json.loads(
        invoke(db_url, "gaps", "--status", "all", "--threshold", "0.1", "--format", "json").output
    )
    mixed = [g for g in gaps if any(d["code"] == "context_mix" for d in g["diagnoses"])]
    assert mixed, [d["code"] for g in gaps for d in g["diagnoses"]]
    # 1,024 in + 256 / 2 out = 1,152 and 16,384 + 128 = 16,512; their median over the file's benchmarks
    for g in mixed:
        message = next(d["message"] for d in g["diagnoses"] if d["code"] == "context_mix")
        assert "than the 8,832 of this deployment's benchmarks" in message
