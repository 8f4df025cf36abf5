"""An alert as a person says it aloud: one plain lead line (how far off, against which prediction, and the
likely cause in everyday words); the cost model's own reasoning stays for an expander."""

import re
from collections.abc import Mapping, Sequence

from specdash.app.text import number_text
from specdash.costmodel.domain import PredictionSource

# The gap's sign, stated wherever a gap is shown.
GAP_CONVENTION = (
    "gap = 1 − measured / predicted: +48 % means measured 48 % slower than predicted, −10 % faster."
)
# Gaps smaller than this read "as predicted".
AS_PREDICTED = 0.005


def prediction_name(source: str | None) -> str:
    builtin = {
        PredictionSource.CALIBRATED: "the calibrated prediction",
        PredictionSource.THEORY: "the first-principles prediction",
    }
    if source in builtin:
        return builtin[PredictionSource(source)]
    return f"the prediction “{source}”" if source else "the prediction"


def gap_phrase(gap: float | None, source: str | None) -> str:
    """`measured 48 % slower than the calibrated prediction`."""
    if gap is None:
        return "not compared with a prediction yet"
    if abs(gap) < AS_PREDICTED:
        return f"measured within {AS_PREDICTED:.1%} of {prediction_name(source)}"
    # gap = 1 - measured / predicted; "x % faster" is measured / predicted - 1 = -gap
    direction = "slower" if gap > 0 else "faster"
    return f"measured {abs(gap) * 100:.0f} % {direction} than {prediction_name(source)}"


def _match(pattern: str, text: str) -> tuple[str, ...] | None:
    found = re.search(pattern, text)
    return found.groups() if found else None


def cause_phrase(code: str | None, message: str) -> str | None:
    """The likely cause behind diagnosis `code`, in a clause (None when there is nothing to say)."""
    if code == "algorithm_mismatch":
        names = _match(r"server ran (\S+) but the drafter is (\S+?):", message)
        detail = f": the server used {names[0]}, the drafter is {names[1]}" if names else ""
        return "the run is invalid" + detail
    if code == "hidden_size_mismatch":
        sizes = _match(r"fed (\d+)-dim hidden states but was trained on (\d+)", message)
        detail = (
            f": the drafter got {sizes[0]}-dim hidden states, it was trained on {sizes[1]}" if sizes else ""
        )
        return "the run is invalid" + detail
    if code == "beyond_trained_depth":
        depths = _match(r"(\d+) draft steps but the drafter was trained (\d+) deep", message)
        return (
            f"it drafts {depths[0]} steps deep but was trained {depths[1]} deep"
            if depths
            else "it drafts deeper than it was trained"
        )
    if code == "acceptance_shortfall":
        taus = _match(r"accept length ([\d.]+) measured vs ([\d.]+)", message)
        return (
            f"it accepts fewer tokens than expected (τ {taus[0]} vs {taus[1]})"
            if taus
            else "it accepts fewer tokens than expected"
        )
    if code == "round_overhead":
        ms = _match(r"round takes ([\d.]+) ms instead of ([\d.]+) ms", message)
        return (
            f"each round takes {ms[0]} ms instead of {ms[1]} ms"
            if ms
            else "each round takes longer than modelled"
        )
    if code == "acceptance_unknown":
        return "nothing predicts this drafter's acceptance here, so acceptance and round time cannot be told apart"
    if code == "acceptance_collapse":  # its verdict's own words: "Acceptance collapsed: accept length ..."
        return message.split(". ")[0].rstrip(".") if message else "acceptance has collapsed"
    if code == "slower_than_baseline":
        return "it is slower than no speculation at all"
    if code == "context_mix":
        found = _match(r"mean context of ([\d,]+) tokens, (longer|shorter) than the ([\d,]+)", message)
        return (
            f"it ran at {found[0]} tokens of context, the prediction is for {found[2]}"
            if found
            else "it ran at another context than the prediction is for"
        )
    if code == "faster_than_predicted":
        if "calibrate it" in message or not message:
            return "the model is too pessimistic for this deployment: calibrate it"
        if "calibrated prediction" in message:
            return "it runs faster than predicted even after calibration"
        return "that prediction is too pessimistic here"
    if code == "no_baseline":
        return "no benchmark without speculation backs the baseline"
    return None


def lead_line(alert: Mapping) -> str:
    """One sentence: `Measured 48 % slower than the calibrated prediction; the run is invalid: the server used
    EAGLE, the drafter is EAGLE3.` `alert` holds gap, source, code (the leading diagnosis) and diagnoses."""
    diagnoses: Sequence[Mapping] = alert.get("diagnoses") or []
    code = alert.get("code") or (diagnoses[0]["code"] if diagnoses else None)
    message = next((d.get("message", "") for d in diagnoses if d.get("code") == code), "")
    if code == "acceptance_collapse" and not message:
        message = alert.get("reason") or ""
    cause = cause_phrase(code, message)
    if alert.get("gap") is None and cause:  # judged without a prediction: the cause is the whole line
        text = cause
    else:
        text = gap_phrase(alert.get("gap"), alert.get("source")) + (f"; {cause}" if cause else "")
    return text[:1].upper() + text[1:] + "."


def benchmark_facts(alert: Mapping) -> list[tuple[str, object]]:
    """What an alert's benchmark and its prediction rest on, as (what, value) rows."""
    return [
        (
            "benchmark",
            f"#{alert['benchmark_id']}" + (f" ({alert['label']})" if alert["label"] else ""),
        ),
        ("drafter path", alert["drafter_path"] or "-"),
        ("engine / format", f"{alert['engine'] or '-'} / {alert['source_format']}"),
        ("hidden states fed to the drafter", number_text(alert["draft_hidden_size"], 0)),
        (
            "predicted round",
            f"{alert['predicted_round_ms'] or 0:.2f} ms = verify compute {alert['compute_ms'] or 0:.2f} "
            f"+ all-reduce {alert['comm_ms'] or 0:.2f} + draft {alert['draft_ms'] or 0:.2f} "
            f"+ overhead {alert['overhead_ms'] or 0:.2f}",
        ),
        (
            "baseline tok/s"
            + (" (estimated: no run without speculation)" if alert.get("baseline_estimated") else ""),
            number_text(alert["baseline_tps"], 1),
        ),
        ("predicted τ from", alert["accept_length_source"] or "-"),
        ("extrapolated past trained depth", alert["extrapolated"]),
        ("approximation", alert["approximation"] or "-"),
    ]
