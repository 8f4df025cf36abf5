"""The What-if page's starting profiles: a drafter's own deployments, never another model's box."""

import pandas as pd
import pytest

from specdash.app.profile_choice import profile_defaults

DEPLOYMENTS = pd.DataFrame(
    [
        ("8x H200, TP8, NVLink", "nvlink", "Kimi-K2.5"),
        ("8x RTX PRO 6000, TP8, PCIe", "pcie", "Kimi-K2.5"),
        ("SpecBundle: Llama-3.1-8B-Instruct", None, "Llama-3.1-8B-Instruct"),
        ("SpecBundle: Qwen3-30B-A3B", None, "Qwen3-30B-A3B"),
    ],
    columns=["name", "interconnect", "target_model"],
)
PCIE, NVLINK, LLAMA = (
    "8x RTX PRO 6000, TP8, PCIe",
    "8x H200, TP8, NVLink",
    "SpecBundle: Llama-3.1-8B-Instruct",
)


@pytest.mark.parametrize(
    "measured_on,expected",
    [
        ([], [PCIE, NVLINK]),  # measured nowhere: the story's PCIe against NVLink
        ([PCIE, NVLINK], [PCIE, NVLINK]),
        ([NVLINK, PCIE], [NVLINK, PCIE]),
        ([PCIE], [PCIE, NVLINK]),  # the other box serving its target
        ([LLAMA], [LLAMA, LLAMA]),  # a Llama-8B drafter never starts on the Kimi H200
    ],
)
def test_a_drafter_starts_on_deployments_it_was_measured_on(measured_on, expected):
    assert profile_defaults(DEPLOYMENTS, measured_on) == expected
