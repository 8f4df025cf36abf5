"""The Settings page on the demo with the real SpecBundle results and an applied calibration: the profile
table shows what each deployment states (a dash with its legend where it states nothing, not a wall of
`None`), and the two parameter sets in use per deployment say what each is for."""

import json

from specdash.app import tables
from tests.app_support import run_page

PAGE = "views/settings.py"
PCIE = "8x RTX PRO 6000, TP8, PCIe"
SB = "SpecBundle: Llama-3.1-8B-Instruct"


def table(at, column: str):
    """The page's table with `column` and its column config (display-only tables carry no key in AppTest)."""
    [found] = [d for d in at.dataframe if column in d.value.columns]
    return found.value, json.loads(found.proto.columns)


def test_profiles_show_what_is_stated_and_a_dash_with_its_legend(monkeypatch, calibrated_url):
    at = run_page(monkeypatch, calibrated_url, PAGE)
    assert not at.exception
    profiles, config = table(at, "sets")
    by_name = profiles.set_index("name")
    # the PCIe profile as specdash/demo.py states it: 90 tok/s, half of a step all-reduce
    assert by_name.loc[PCIE, "baseline_tps"] == 90.0 and by_name.loc[PCIE, "comm_fraction"] == 0.5
    assert by_name.loc[PCIE, "num_gpus"] == 8 and by_name.loc[PCIE, "tp_size"] == 8
    # a published results file states no profile: empty cells, drawn as the dash the caption explains
    assert by_name.loc[SB, ["comm_fraction", "draft_step_ms", "round_overhead_ms"]].isna().all()
    assert [d.proto.placeholder for d in at.dataframe] == [tables.MISSING] * len(at.dataframe)
    assert any(
        c.value.startswith(f"A dash ({tables.MISSING}) is a cost the profile does not state")
        for c in at.caption
    )
    labels = {name: spec["label"] for name, spec in config.items() if spec and name != "_index"}
    assert labels["num_gpus"] == "GPUs" and labels["draft_step_ms"] == "draft ms/step"
    assert config["num_gpus"]["type_config"]["format"] == "%d"  # 8, not 8.000000
    assert "is_demo" not in profiles.columns and "gap_threshold" not in profiles.columns
    # which sets predict it: the published deployment has its theory set and the fit applied over it
    assert by_name.loc[SB, "sets"] == "theory v1 + calibrated v2"


def test_the_two_sets_in_use_say_what_each_is_for(monkeypatch, calibrated_url):
    at = run_page(monkeypatch, calibrated_url, PAGE)
    sets, config = table(at, "role")
    mine = sets[sets["deployment"] == SB].set_index("source")
    assert mine.loc["theory", "role"] == "in use: theory"
    assert mine.loc["calibrated", "role"] == "in use: calibrated, judges alerts"
    assert config["role"]["label"] == "what it is for"
    [why] = [m.value for m in at.markdown if "two sets in use at once" in m.value]
    assert "**theory**" in why and "**calibrated**" in why and "judged against" in why
    # a set replaced by a newer version of its kind is an earlier one (PCIe: theory v1 before the demo's v2)
    assert set(sets.loc[~sets["role"].str.startswith("in use"), "role"]) <= {"earlier version"}
    in_use = sets[sets["role"].str.startswith("in use")]
    assert not in_use.duplicated(["deployment", "source"]).any()  # one of each kind per deployment
