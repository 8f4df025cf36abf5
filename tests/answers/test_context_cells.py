"""A deployment scraped for a long time states a slightly different mean context in every window; the
context model takes them by setting, load and context bucket, one prediction each."""

from specdash.answers.context import cells, measured_ms
from specdash.costmodel.context import context_bucket
from specdash.db.contexts import ContextRow


def row(input_tokens: float, tps: float, concurrency: int = 8, speculative: bool = True) -> ContextRow:
    return ContextRow(
        checkpoint_id=1 if speculative else None,
        speculative=speculative,
        num_steps=3 if speculative else 0,
        topk=1,
        num_draft_tokens=4 if speculative else None,
        concurrency=concurrency,
        dataset=None,
        decode_tps=tps,
        accept_length=2.5 if speculative else None,
        input_tokens=input_tokens,
        output_tokens=200.0,
    )


def test_a_thousand_windows_at_two_prompt_lengths_are_four_cells():
    windows = [row(1000 + i % 7, 100.0) for i in range(500)] + [row(8000 + i % 9, 50.0) for i in range(500)]
    windows += [row(1003, 80.0, speculative=False), row(8004, 40.0, speculative=False)]
    grouped = cells(windows)
    # contexts 1,100 and 8,100 (input + half of 200 out) to two digits: 1,100 and 8,100
    assert sorted((k[1], k[5]) for k in grouped) == [
        (False, 1100.0),
        (False, 8100.0),
        (True, 1100.0),
        (True, 8100.0),
    ]
    assert len(grouped[(1, True, 3, 1, 8, 1100.0)]) == 500
    # 1000 x tau 2.5 / 100 tok/s
    assert measured_ms(windows[0]) == 25.0
    assert context_bucket(16512) == 17000.0


def test_a_speculative_row_without_an_accept_length_is_not_a_point():
    bare = row(1000, 100.0)
    bare = ContextRow(**{**bare.__dict__, "accept_length": None})
    assert cells([bare]) == {}
